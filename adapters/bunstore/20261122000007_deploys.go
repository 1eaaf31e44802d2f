package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upDeploys, downDeploys) }

// upDeploys creates deploys: each project's last successful deploy, which
// the platform asks before it accepts a custom domain. Project IDs compare
// bytewise, as in domain_configs.
func upDeploys(ctx context.Context, db *bun.DB) error {
	var stmt string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		stmt = `CREATE TABLE IF NOT EXISTS deploys (
			project_id TEXT NOT NULL PRIMARY KEY,
			deployed_ns INTEGER NOT NULL
		)`
	case dialect.PG:
		stmt = `CREATE TABLE IF NOT EXISTS deploys (
			project_id VARCHAR(255) COLLATE "C" NOT NULL PRIMARY KEY,
			deployed_ns BIGINT NOT NULL
		)`
	default: // MySQL and MariaDB
		stmt = `CREATE TABLE IF NOT EXISTS deploys (
			project_id VARCHAR(255) NOT NULL PRIMARY KEY,
			deployed_ns BIGINT NOT NULL
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	}
	return execAll(ctx, db, stmt)
}

func downDeploys(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS deploys")
}
