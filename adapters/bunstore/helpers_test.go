package bunstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/uptrace/bun"
)

// serviceDSN returns the DSN of a database service from env, or skips the
// test when it is unset, unless PETSTORE_TEST_REQUIRE_SERVICES=1 makes a
// missing service a failure (as in CI).
func serviceDSN(t testing.TB, env string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("PETSTORE_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is unset and PETSTORE_TEST_REQUIRE_SERVICES=1", env)
		}
		example := map[string]string{
			"PETSTORE_TEST_POSTGRES": "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
			"PETSTORE_TEST_MYSQL":    "mysql://root@127.0.0.1:3306/test",
		}[env]
		t.Skipf("%s is unset; set it (e.g. %s) to run this test", env, example)
	}
	return dsn
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

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
	db, err := bunstore.OpenSQLite(filepath.Join(t.TempDir(), "petstore.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return migrated(t, db)
}

var (
	adminMu  sync.Mutex
	adminDBs = map[string]*bun.DB{} // by DSN; shared by the tests of one run
)

func adminDB(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	adminMu.Lock()
	defer adminMu.Unlock()
	if db := adminDBs[dsn]; db != nil {
		return db
	}
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	adminDBs[dsn] = db
	return db
}

// openPostgresDSN creates a fresh schema and returns a DSN whose
// search_path selects it; the schema is dropped when the test ends.
func openPostgresDSN(t testing.TB) string {
	t.Helper()
	base := serviceDSN(t, "PETSTORE_TEST_POSTGRES")
	admin := adminDB(t, base)
	schema := randomName("petstore_t_")
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPostgres(t testing.TB) *bun.DB {
	t.Helper()
	return openDSN(t, openPostgresDSN(t))
}

// openMySQLDSN creates a fresh database and returns its DSN; the database
// is dropped when the test ends.
func openMySQLDSN(t testing.TB) string {
	t.Helper()
	base := serviceDSN(t, "PETSTORE_TEST_MYSQL")
	admin := adminDB(t, base)
	name := randomName("petstore_t_")
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP DATABASE "+name) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func openMySQL(t testing.TB) *bun.DB {
	t.Helper()
	return openDSN(t, openMySQLDSN(t))
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
