package bunopen_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/testenv"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		dsn, kind, driverDSN string
	}{
		{"memory", bunopen.KindMemory, ""},
		{"sqlite:petstore.db", bunopen.KindSQLite, "petstore.db"},
		{"sqlite:/var/lib/petstore/data.db", bunopen.KindSQLite, "/var/lib/petstore/data.db"},
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=disable", bunopen.KindPostgres,
			"postgres://u:p@127.0.0.1:5432/db?default_query_exec_mode=simple_protocol&sslmode=disable"},
		{"postgresql://127.0.0.1/db?default_query_exec_mode=exec", bunopen.KindPostgres,
			"postgresql://127.0.0.1/db?default_query_exec_mode=exec"},
		{"mysql://root@127.0.0.1:3306/test", bunopen.KindMySQL,
			"root@tcp(127.0.0.1:3306)/test?clientFoundRows=true&parseTime=true"},
		{"mysql://app:s%40cret@localhost/shop?timeout=5s", bunopen.KindMySQL,
			"app:s@cret@tcp(localhost:3306)/shop?clientFoundRows=true&parseTime=true&timeout=5s"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			got, err := bunopen.Parse(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.kind || got.DriverDSN != tc.driverDSN {
				t.Fatalf("Parse = %+v, want {%s %s}", got, tc.kind, tc.driverDSN)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, dsn := range []string{
		"", "sqlite:", "sqlite:a.db?mode=ro", "memory:", "file:a.db", "redis://127.0.0.1",
		"postgres://", "mysql://", "mysql://127.0.0.1:3306", "mysql://127.0.0.1/", "mysql://h/db?parseTime=maybe",
		"mysql://root:hunter2@/db",
	} {
		t.Run(dsn, func(t *testing.T) {
			_, err := bunopen.Parse(dsn)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", dsn)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %q shows the password", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:secret@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://root@h:3306/db", "mysql://root@h:3306/db"},
		{"sqlite:petstore.db", "sqlite:petstore.db"},
	} {
		if got := bunopen.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOpen opens each kind of database and stores a pet in it.
func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"Memory", func(*testing.T) string { return "memory" }},
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "p.db") }},
		{"SQLiteRelative", func(t *testing.T) string { t.Chdir(t.TempDir()); return "sqlite:petstore.db" }},
		{"PostgreSQL", func(t *testing.T) string { return testenv.PostgresDSN(t) }},
		{"MariaDB", func(t *testing.T) string { return testenv.MySQLDSN(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t, tc.dsn(t))
			var one int
			if err := db.NewSelect().ColumnExpr("1").Scan(ctx, &one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 = %d, %v", one, err)
			}
		})
	}
}

// TestOpenKeepsItsConnections: waves of more concurrent queries than
// DefaultMaxConns share a pool of at most that many connections, which
// stay open between waves instead of being closed and dialled again.
func TestOpenKeepsItsConnections(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dsn   func(t testing.TB) string
		sleep string
	}{
		{"PostgreSQL", testenv.PostgresDSN, "SELECT pg_sleep(0.02)"},
		{"MariaDB", testenv.MySQLDSN, "SELECT SLEEP(0.02)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t, tc.dsn(t))
			for range 3 {
				var wg sync.WaitGroup
				for range 2 * bunopen.DefaultMaxConns {
					wg.Go(func() {
						if _, err := db.ExecContext(ctx, tc.sleep); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			st := db.Stats()
			if st.MaxOpenConnections != bunopen.DefaultMaxConns || st.OpenConnections > bunopen.DefaultMaxConns {
				t.Errorf("pool cap %d with %d open, want a cap of %d", st.MaxOpenConnections, st.OpenConnections, bunopen.DefaultMaxConns)
			}
			if st.MaxIdleClosed != 0 {
				t.Errorf("%d connections closed for want of idle room between waves, want none", st.MaxIdleClosed)
			}
		})
	}
}

// open is bunopen.Open for a test: it fails t on an error and closes the
// database when t ends.
func open(t *testing.T, dsn string) *bun.DB {
	t.Helper()
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestOpenUnreachable(t *testing.T) {
	_, err := bunopen.Open(context.Background(), "postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %q shows the password", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"memory", "sqlite:petstore.db", "sqlite:", "postgres://u:p@127.0.0.1:5432/db?sslmode=disable",
		"postgresql://h/db", "mysql://root@127.0.0.1:3306/test", "mysql://a:b@h/db?timeout=1s&tls=skip-verify",
		"mysql://h/db?parseTime=false", "mysql://[::1]:3306/db", "mysql://%zz@h/db", "file:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		tg, err := bunopen.Parse(dsn)
		if err != nil {
			return
		}
		switch tg.Kind {
		case bunopen.KindMemory, bunopen.KindSQLite:
		case bunopen.KindPostgres:
			u, err := url.Parse(tg.DriverDSN)
			if err != nil || u.Query().Get("default_query_exec_mode") == "" {
				t.Fatalf("Parse(%q) = %q: not a pgx URL with an exec mode", dsn, tg.DriverDSN)
			}
		case bunopen.KindMySQL:
			// bunstore relies on these two whatever the DSN said.
			if !strings.Contains(tg.DriverDSN, "clientFoundRows=true") || !strings.Contains(tg.DriverDSN, "parseTime=true") {
				t.Fatalf("Parse(%q) = %q: lost clientFoundRows or parseTime", dsn, tg.DriverDSN)
			}
		default:
			t.Fatalf("Parse(%q) = unknown kind %q", dsn, tg.Kind)
		}
	})
}

func ExampleOpen() {
	ctx := context.Background()
	db, err := bunopen.Open(ctx, "memory")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := bunstore.Migrate(ctx, db); err != nil {
		panic(err)
	}
	svc := petstore.NewService(bunstore.New(db))
	pet, err := svc.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable})
	if err != nil {
		panic(err)
	}
	fmt.Println(pet.ID, pet.Name, pet.Status)
	// Output: 1 Rex available
}
