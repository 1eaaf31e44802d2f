package bunstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// migrations holds every schema change of the package.
//
// To add tables for a feature, create a NEW file in this package whose name
// starts with a 14-digit UTC timestamp and a lower-case comment, e.g.
// 20261123090000_idempotency.go, and register its up and down functions in
// an init function:
//
//	func init() { migrations.MustRegister(upIdempotency, downIdempotency) }
//
// bun/migrate derives the migration's name from the file name (so each
// feature's file sorts in the order it was written and no two engineers
// edit the same file), and Migrate applies the unapplied ones in name
// order. Write up functions that can be retried after a partial failure:
// CREATE TABLE IF NOT EXISTS, and createIndex (which tolerates an index that
// exists already, since bun drops IF NOT EXISTS on MySQL, bun issue #1332).
var migrations = migrate.NewMigrations()

// Names of bun/migrate's bookkeeping tables, prefixed so they cannot clash
// with the tables of another application sharing the database.
const (
	migrationsTable     = "petstore_migrations"
	migrationLocksTable = "petstore_migration_locks"
)

// Migrate creates or updates the schema: it applies every migration not
// applied yet, in name order, and records each only after it succeeded.
// Running it again is a no-op. Multi-replica deployments run it once, as a
// separate step, before starting the API processes.
func Migrate(ctx context.Context, db *bun.DB) error {
	m := migrate.NewMigrator(db, migrations,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
	)
	if err := m.Init(ctx); err != nil {
		return mapErr(ctx, "migrate: init", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return mapErr(ctx, "migrate", err)
	}
	return nil
}

// createIndex creates an index unless it exists. PostgreSQL and SQLite
// support IF NOT EXISTS; MySQL/MariaDB do not, so there a duplicate-name
// error means the index is already there.
func createIndex(ctx context.Context, db bun.IDB, name, table string, unique bool, columns ...string) error {
	kw := "INDEX"
	if unique {
		kw = "UNIQUE INDEX"
	}
	ifNotExists := "IF NOT EXISTS "
	if db.Dialect().Name() == dialect.MySQL {
		ifNotExists = ""
	}
	// Names are constants of this package, plain identifiers that need no
	// quoting in any of the three dialects.
	q := fmt.Sprintf("CREATE %s %s%s ON %s (%s)", kw, ifNotExists, name, table, strings.Join(columns, ", "))
	_, err := db.ExecContext(ctx, q)
	if err != nil && db.Dialect().Name() == dialect.MySQL && strings.Contains(err.Error(), "Duplicate key name") {
		return nil
	}
	return err
}

// execAll runs statements in order, stopping at the first error.
func execAll(ctx context.Context, db bun.IDB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%.60s: %w", s, err)
		}
	}
	return nil
}
