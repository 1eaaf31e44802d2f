package bunstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/uptrace/bun"
)

func migrated(t testing.TB, db *bun.DB) *bun.DB {
	t.Helper()
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func openMemory(t testing.TB) *bun.DB {
	t.Helper()
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return migrated(t, db)
}

func openFile(t testing.TB) *bun.DB {
	t.Helper()
	return migrated(t, openFileAt(t, filepath.Join(t.TempDir(), "petstore.db")))
}

// openFileAt opens the SQLite file at path, closed when t ends.
func openFileAt(t testing.TB, path string) *bun.DB {
	t.Helper()
	db, err := bunstore.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func openPostgres(t testing.TB) *bun.DB {
	t.Helper()
	return openDSN(t, testenv.PostgresSchema(t))
}

func openMySQL(t testing.TB) *bun.DB {
	t.Helper()
	return openDSN(t, testenv.MySQLDatabase(t))
}

func openDSN(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after the drop, so it runs before it.
	t.Cleanup(func() { _ = db.Close() })
	return migrated(t, db)
}

// backends are the databases every behaviour test runs on.
var backends = []struct {
	name string
	open func(testing.TB) *bun.DB
}{
	{"SQLiteMemory", openMemory},
	{"SQLiteFile", openFile},
	{"PostgreSQL", openPostgres},
	{"MariaDB", openMySQL},
}
