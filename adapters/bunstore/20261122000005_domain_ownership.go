package bunstore

import (
	"context"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upDomainOwnership, downDomainOwnership) }

// upDomainOwnership adds domains.ownership_token, the TXT value a domain
// must publish before it verifies when another project held its name last
// (NULL: no proof needed, which is right for every existing row), and an
// index on (name, created_ns) for Engine.Add's question "who held this
// name last?". VARCHAR(64) NULL is the same type in all three dialects.
// Retry-safe: the column is added only when a probe finds it missing,
// since SQLite and MySQL have no ADD COLUMN IF NOT EXISTS.
func upDomainOwnership(ctx context.Context, db *bun.DB) error {
	if !hasColumn(ctx, db, "domains", "ownership_token") {
		// Two migrators on one SQLite file (which has no advisory lock)
		// can both see the column missing; the loser's ALTER fails, and
		// the column it wanted is there: that is success.
		if err := execAll(ctx, db, "ALTER TABLE domains ADD COLUMN ownership_token VARCHAR(64) NULL"); err != nil && !hasColumn(ctx, db, "domains", "ownership_token") {
			return err
		}
	}
	return createIndex(ctx, db, "domains_name", "domains", false, "name", "created_ns")
}

func downDomainOwnership(ctx context.Context, db *bun.DB) error {
	if err := dropIndex(ctx, db, "domains_name", "domains"); err != nil {
		return err
	}
	if !hasColumn(ctx, db, "domains", "ownership_token") {
		return nil
	}
	return execAll(ctx, db, "ALTER TABLE domains DROP COLUMN ownership_token")
}

// hasColumn reports whether table has column, by selecting it from no
// rows: portable, and a plain statement outside any transaction, so the
// expected error aborts nothing.
func hasColumn(ctx context.Context, db bun.IDB, table, column string) bool {
	rows, err := db.QueryContext(ctx, "SELECT "+column+" FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return false
	}
	_ = rows.Close()
	return true
}

// dropIndex drops an index if it exists; MySQL names the table and has no
// IF EXISTS for indexes.
func dropIndex(ctx context.Context, db bun.IDB, name, table string) error {
	if db.Dialect().Name() == dialect.MySQL {
		_, err := db.ExecContext(ctx, "DROP INDEX "+name+" ON "+table)
		if err != nil && strings.Contains(err.Error(), "check that") { // 1091: can't DROP; check that it exists
			return nil
		}
		return err
	}
	_, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS "+name)
	return err
}
