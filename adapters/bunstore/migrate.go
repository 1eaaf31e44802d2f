package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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
// separate step, before starting the API processes; should two replicas
// run it at once anyway, on PostgreSQL and MySQL a database lock makes the
// second wait for the first and then find nothing to do.
func Migrate(ctx context.Context, db *bun.DB) (err error) {
	unlock, err := lockMigrations(ctx, db)
	if err != nil {
		return migrateErr(ctx, "migrate: lock", err)
	}
	defer func() {
		if uerr := unlock(); err == nil && uerr != nil {
			err = migrateErr(ctx, "migrate: unlock", uerr)
		}
	}()
	m := migrate.NewMigrator(db, migrations,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
	)
	if err := m.Init(ctx); err != nil {
		return migrateErr(ctx, "migrate: init", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return migrateErr(ctx, "migrate", err)
	}
	return nil
}

// migrateErr is mapErr for Migrate, an operator's step: a down database is
// still unavailable, but any other failure keeps the database's own words
// (which constraint, which statement) because an operator must act on them.
func migrateErr(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if isUnavailable(err) {
		return mapErr(ctx, op, err)
	}
	return fmt.Errorf("bunstore: %s: %w", op, err)
}

// lockMigrations takes a lock that only one Migrate on the same schema can
// hold, and returns the function that releases it. It holds a connection
// of its own for the lock's lifetime because both locks belong to a
// session; bun/migrate's own lock table would stay locked forever after a
// crash. SQLite needs none: its migrations are idempotent DDL and a
// migration recorded twice is harmless (records are matched by name).
func lockMigrations(ctx context.Context, db *bun.DB) (func() error, error) {
	var lock, unlock string
	switch db.Dialect().Name() {
	case dialect.PG:
		lock = "SELECT pg_advisory_lock(hashtext(current_schema() || '.petstore_migrate'))::text"
		unlock = "SELECT pg_advisory_unlock(hashtext(current_schema() || '.petstore_migrate'))::text"
	case dialect.MySQL:
		lock = "SELECT GET_LOCK(CONCAT('petstore_migrate:', DATABASE()), 300)"
		unlock = "SELECT RELEASE_LOCK(CONCAT('petstore_migrate:', DATABASE()))"
	default:
		return func() error { return nil }, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got sql.NullString
	if err := conn.QueryRowContext(ctx, lock).Scan(&got); err != nil {
		// The lock may be held even so, its answer lost.
		discard(conn.Conn)
		return nil, err
	}
	if db.Dialect().Name() == dialect.MySQL && got.String != "1" {
		_ = conn.Close()
		return nil, errors.New("timed out waiting for another Migrate to finish")
	}
	return func() error {
		// The lock must be released even when ctx is done, or the next
		// Migrate through this connection's session would wait on it;
		// but a database that does not answer must not hold Migrate
		// past ctx. Ending the session releases the lock as well.
		if ctx.Err() != nil {
			discard(conn.Conn)
			return nil
		}
		if _, err := conn.ExecContext(ctx, unlock); err != nil {
			discard(conn.Conn)
			return err
		}
		return conn.Close()
	}, nil
}

// discard closes conn's connection instead of returning it to the pool,
// which ends its session and whatever locks the session holds.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
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
