package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upIdempotency, downIdempotency) }

// upIdempotency creates idempotency_keys, one row per claimed
// Idempotency-Key with the response to replay. The key column compares
// bytes exactly: on MySQL a VARCHAR under a PAD SPACE collation would make
// "abc" and "abc " one key, so it is VARBINARY there.
func upIdempotency(ctx context.Context, db *bun.DB) error {
	var q string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		q = `CREATE TABLE IF NOT EXISTS idempotency_keys (
			scope TEXT NOT NULL,
			idem_key TEXT NOT NULL,
			request_hash TEXT NOT NULL,
			created_at_ns INTEGER NOT NULL,
			completed INTEGER NOT NULL DEFAULT 0,
			status INTEGER NOT NULL DEFAULT 0,
			content_type TEXT NOT NULL DEFAULT '',
			location TEXT NOT NULL DEFAULT '',
			body BLOB NULL,
			PRIMARY KEY (scope, idem_key)
		)`
	case dialect.PG:
		q = `CREATE TABLE IF NOT EXISTS idempotency_keys (
			scope VARCHAR(128) NOT NULL,
			idem_key VARCHAR(255) NOT NULL,
			request_hash VARCHAR(1024) NOT NULL,
			created_at_ns BIGINT NOT NULL,
			completed BOOLEAN NOT NULL DEFAULT FALSE,
			status INTEGER NOT NULL DEFAULT 0,
			content_type VARCHAR(255) NOT NULL DEFAULT '',
			location VARCHAR(2048) NOT NULL DEFAULT '',
			body BYTEA NULL,
			PRIMARY KEY (scope, idem_key)
		)`
	default: // MySQL and MariaDB
		q = `CREATE TABLE IF NOT EXISTS idempotency_keys (
			scope VARBINARY(128) NOT NULL,
			idem_key VARBINARY(255) NOT NULL,
			request_hash VARCHAR(1024) NOT NULL,
			created_at_ns BIGINT NOT NULL,
			completed BOOLEAN NOT NULL DEFAULT FALSE,
			status INTEGER NOT NULL DEFAULT 0,
			content_type VARCHAR(255) NOT NULL DEFAULT '',
			location VARCHAR(2048) NOT NULL DEFAULT '',
			body MEDIUMBLOB NULL,
			PRIMARY KEY (scope, idem_key)
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	}
	if err := execAll(ctx, db, q); err != nil {
		return err
	}
	// Purging deletes by age.
	return createIndex(ctx, db, "idempotency_keys_created", "idempotency_keys", false, "created_at_ns")
}

func downIdempotency(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS idempotency_keys")
}
