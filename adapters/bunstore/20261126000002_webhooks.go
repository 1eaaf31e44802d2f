package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upWebhooks, downWebhooks) }

// upWebhooks creates webhook_endpoints and webhook_deliveries, the outbox
// of the webhook package. A delivery is one event for one endpoint (its
// primary key); its lease (lease_token, lease_until_ns) is what keeps two
// processes from sending the same attempt, and the answers of its last
// attempts are one JSON document, since nothing selects by them. The
// secret is kept as it is: every attempt is signed with it.
func upWebhooks(ctx context.Context, db *bun.DB) error {
	var endpoints, deliveries string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		endpoints = `CREATE TABLE IF NOT EXISTS webhook_endpoints (
			id TEXT NOT NULL PRIMARY KEY,
			project_id TEXT NOT NULL,
			url TEXT NOT NULL,
			secret TEXT NOT NULL,
			created_ns INTEGER NOT NULL
		)`
		deliveries = `CREATE TABLE IF NOT EXISTS webhook_deliveries (
			event_id TEXT NOT NULL,
			endpoint_id TEXT NOT NULL,
			project_id TEXT NOT NULL,
			type TEXT NOT NULL,
			payload TEXT NOT NULL,
			created_ns INTEGER NOT NULL,
			state TEXT NOT NULL,
			attempts INTEGER NOT NULL,
			next_attempt_ns INTEGER NOT NULL,
			lease_token TEXT NOT NULL,
			lease_until_ns INTEGER NOT NULL,
			answers TEXT NOT NULL,
			PRIMARY KEY (event_id, endpoint_id)
		)`
	case dialect.PG:
		endpoints = `CREATE TABLE IF NOT EXISTS webhook_endpoints (
			id VARCHAR(64) COLLATE "C" NOT NULL PRIMARY KEY,
			project_id VARCHAR(255) COLLATE "C" NOT NULL,
			url TEXT NOT NULL,
			secret VARCHAR(255) NOT NULL,
			created_ns BIGINT NOT NULL
		)`
		deliveries = `CREATE TABLE IF NOT EXISTS webhook_deliveries (
			event_id VARCHAR(64) COLLATE "C" NOT NULL,
			endpoint_id VARCHAR(64) COLLATE "C" NOT NULL,
			project_id VARCHAR(255) COLLATE "C" NOT NULL,
			type VARCHAR(64) NOT NULL,
			payload TEXT NOT NULL,
			created_ns BIGINT NOT NULL,
			state VARCHAR(16) NOT NULL,
			attempts INTEGER NOT NULL,
			next_attempt_ns BIGINT NOT NULL,
			lease_token VARCHAR(64) NOT NULL,
			lease_until_ns BIGINT NOT NULL,
			answers TEXT NOT NULL,
			PRIMARY KEY (event_id, endpoint_id)
		)`
	default: // MySQL and MariaDB
		const suffix = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
		endpoints = `CREATE TABLE IF NOT EXISTS webhook_endpoints (
			id VARCHAR(64) NOT NULL PRIMARY KEY,
			project_id VARCHAR(255) NOT NULL,
			url TEXT NOT NULL,
			secret VARCHAR(255) NOT NULL,
			created_ns BIGINT NOT NULL
		)` + suffix
		deliveries = `CREATE TABLE IF NOT EXISTS webhook_deliveries (
			event_id VARCHAR(64) NOT NULL,
			endpoint_id VARCHAR(64) NOT NULL,
			project_id VARCHAR(255) NOT NULL,
			type VARCHAR(64) NOT NULL,
			payload MEDIUMTEXT NOT NULL,
			created_ns BIGINT NOT NULL,
			state VARCHAR(16) NOT NULL,
			attempts INT NOT NULL,
			next_attempt_ns BIGINT NOT NULL,
			lease_token VARCHAR(64) NOT NULL,
			lease_until_ns BIGINT NOT NULL,
			answers MEDIUMTEXT NOT NULL,
			PRIMARY KEY (event_id, endpoint_id)
		)` + suffix
	}
	if err := execAll(ctx, db, endpoints, deliveries); err != nil {
		return err
	}
	if err := createIndex(ctx, db, "webhook_endpoints_project", "webhook_endpoints", false, "project_id", "created_ns"); err != nil {
		return err
	}
	// Workers ask for due deliveries; the dashboard for an endpoint's last.
	if err := createIndex(ctx, db, "webhook_deliveries_due", "webhook_deliveries", false, "state", "next_attempt_ns"); err != nil {
		return err
	}
	return createIndex(ctx, db, "webhook_deliveries_endpoint", "webhook_deliveries", false, "endpoint_id", "created_ns")
}

func downWebhooks(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS webhook_deliveries", "DROP TABLE IF EXISTS webhook_endpoints")
}
