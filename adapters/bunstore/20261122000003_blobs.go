package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upBlobs, downBlobs) }

// upBlobs creates blobs (certificates, keys and ACME account data) and
// blob_locks. Keys and lock names are binary columns in every dialect so
// that equality, order and prefix ranges compare bytes: PostgreSQL's TEXT
// would sort by the database's locale, and MySQL's collations ignore
// trailing spaces.
func upBlobs(ctx context.Context, db *bun.DB) error {
	var blobs, locks string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		blobs = `CREATE TABLE IF NOT EXISTS blobs (
			blob_key BLOB NOT NULL PRIMARY KEY,
			value BLOB NOT NULL,
			size INTEGER NOT NULL,
			modified_ns INTEGER NOT NULL
		)`
		locks = `CREATE TABLE IF NOT EXISTS blob_locks (
			name BLOB NOT NULL PRIMARY KEY,
			owner TEXT NOT NULL,
			expires_ns INTEGER NOT NULL
		)`
	case dialect.PG:
		blobs = `CREATE TABLE IF NOT EXISTS blobs (
			blob_key BYTEA NOT NULL PRIMARY KEY,
			value BYTEA NOT NULL,
			size BIGINT NOT NULL,
			modified_ns BIGINT NOT NULL
		)`
		locks = `CREATE TABLE IF NOT EXISTS blob_locks (
			name BYTEA NOT NULL PRIMARY KEY,
			owner VARCHAR(255) NOT NULL,
			expires_ns BIGINT NOT NULL
		)`
	default: // MySQL and MariaDB
		blobs = `CREATE TABLE IF NOT EXISTS blobs (
			blob_key VARBINARY(1024) NOT NULL PRIMARY KEY,
			value LONGBLOB NOT NULL,
			size BIGINT NOT NULL,
			modified_ns BIGINT NOT NULL
		) ENGINE=InnoDB`
		locks = `CREATE TABLE IF NOT EXISTS blob_locks (
			name VARBINARY(1024) NOT NULL PRIMARY KEY,
			owner VARCHAR(255) NOT NULL,
			expires_ns BIGINT NOT NULL
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	}
	return execAll(ctx, db, blobs, locks)
}

func downBlobs(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS blob_locks", "DROP TABLE IF EXISTS blobs")
}
