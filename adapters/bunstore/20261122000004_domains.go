package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upDomains, downDomains) }

// upDomains creates domains and domain_configs. An entry's queried fields
// are columns; the rest (findings, DNS answers, history) is one JSON
// document, since nothing selects by it. held_name is the name while the
// entry is not removed and NULL after: its UNIQUE constraint is what lets
// exactly one of two racing projects claim a name, on every database
// (MySQL has no partial indexes; all three allow many NULLs in a UNIQUE
// column). Names and project ids sort bytewise ("C" collation on
// PostgreSQL) so every database lists in the same order.
func upDomains(ctx context.Context, db *bun.DB) error {
	var domains, configs string
	switch db.Dialect().Name() {
	case dialect.SQLite:
		domains = `CREATE TABLE IF NOT EXISTS domains (
			id TEXT NOT NULL PRIMARY KEY,
			project_id TEXT NOT NULL,
			name TEXT NOT NULL,
			held_name TEXT NULL UNIQUE,
			status TEXT NOT NULL,
			next_check_ns INTEGER NULL,
			created_ns INTEGER NOT NULL,
			version INTEGER NOT NULL,
			data TEXT NOT NULL
		)`
		configs = `CREATE TABLE IF NOT EXISTS domain_configs (
			project_id TEXT NOT NULL PRIMARY KEY,
			data TEXT NOT NULL
		)`
	case dialect.PG:
		domains = `CREATE TABLE IF NOT EXISTS domains (
			id VARCHAR(64) NOT NULL PRIMARY KEY,
			project_id VARCHAR(255) COLLATE "C" NOT NULL,
			name VARCHAR(255) COLLATE "C" NOT NULL,
			held_name VARCHAR(255) COLLATE "C" NULL UNIQUE,
			status VARCHAR(16) NOT NULL,
			next_check_ns BIGINT NULL,
			created_ns BIGINT NOT NULL,
			version BIGINT NOT NULL,
			data TEXT NOT NULL
		)`
		configs = `CREATE TABLE IF NOT EXISTS domain_configs (
			project_id VARCHAR(255) COLLATE "C" NOT NULL PRIMARY KEY,
			data TEXT NOT NULL
		)`
	default: // MySQL and MariaDB
		const suffix = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
		domains = `CREATE TABLE IF NOT EXISTS domains (
			id VARCHAR(64) NOT NULL PRIMARY KEY,
			project_id VARCHAR(255) NOT NULL,
			name VARCHAR(255) NOT NULL,
			held_name VARCHAR(255) NULL UNIQUE,
			status VARCHAR(16) NOT NULL,
			next_check_ns BIGINT NULL,
			created_ns BIGINT NOT NULL,
			version BIGINT NOT NULL,
			data MEDIUMTEXT NOT NULL
		)` + suffix
		configs = `CREATE TABLE IF NOT EXISTS domain_configs (
			project_id VARCHAR(255) NOT NULL PRIMARY KEY,
			data MEDIUMTEXT NOT NULL
		)` + suffix
	}
	if err := execAll(ctx, db, domains, configs); err != nil {
		return err
	}
	// The background loop asks for due entries by next check time.
	if err := createIndex(ctx, db, "domains_next_check", "domains", false, "next_check_ns"); err != nil {
		return err
	}
	return createIndex(ctx, db, "domains_project", "domains", false, "project_id", "name")
}

func downDomains(ctx context.Context, db *bun.DB) error {
	return execAll(ctx, db, "DROP TABLE IF EXISTS domain_configs", "DROP TABLE IF EXISTS domains")
}
