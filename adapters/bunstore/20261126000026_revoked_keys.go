package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upRevokedKeys, downRevokedKeys) }

// upRevokedKeys creates revoked_keys: every revoked key, under the hash of
// its secret, so a revocation survives the configuration that still lists
// the secret (issue 26) and can be undone with the key's own id and
// project.
func upRevokedKeys(ctx context.Context, db *bun.DB) error {
	var q string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		q = `CREATE TABLE IF NOT EXISTS revoked_keys (
			hash TEXT NOT NULL PRIMARY KEY,
			id TEXT NOT NULL,
			project_id TEXT NOT NULL,
			plan TEXT NOT NULL,
			per_minute INTEGER NOT NULL,
			per_day INTEGER NOT NULL,
			created_at_ns INTEGER NOT NULL,
			revoked_at_ns INTEGER NOT NULL
		)`
	case dialect.PG:
		q = `CREATE TABLE IF NOT EXISTS revoked_keys (
			hash VARCHAR(128) NOT NULL PRIMARY KEY,
			id VARCHAR(64) NOT NULL,
			project_id VARCHAR(255) NOT NULL,
			plan VARCHAR(32) NOT NULL,
			per_minute BIGINT NOT NULL,
			per_day BIGINT NOT NULL,
			created_at_ns BIGINT NOT NULL,
			revoked_at_ns BIGINT NOT NULL
		)`
	default: // MySQL and MariaDB
		q = `CREATE TABLE IF NOT EXISTS revoked_keys (
			hash VARCHAR(128) NOT NULL PRIMARY KEY,
			id VARCHAR(64) NOT NULL,
			project_id VARCHAR(255) NOT NULL,
			plan VARCHAR(32) NOT NULL,
			per_minute BIGINT NOT NULL,
			per_day BIGINT NOT NULL,
			created_at_ns BIGINT NOT NULL,
			revoked_at_ns BIGINT NOT NULL
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	}
	if err := execAll(ctx, db, q); err != nil {
		return err
	}
	return createIndex(ctx, db, "revoked_keys_id", "revoked_keys", false, "id")
}

func downRevokedKeys(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS revoked_keys")
}
