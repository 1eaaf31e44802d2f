package bunstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver a MySQL deployment uses
	_ "github.com/jackc/pgx/v5/stdlib" // the driver a PostgreSQL deployment uses
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestDownDatabaseIsUnavailable points stores at databases that cannot
// answer: every method must return unavailable, with a message that names
// no driver, host or SQL, and nothing may panic.
func TestDownDatabaseIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *bun.DB
	}{
		{"PostgreSQLRefused", func(t *testing.T) *bun.DB {
			sqldb, err := sql.Open("pgx", "postgres://postgres@"+closedPort(t)+"/test?sslmode=disable&connect_timeout=2")
			if err != nil {
				t.Fatal(err)
			}
			return bun.NewDB(sqldb, pgdialect.New())
		}},
		{"MariaDBRefused", func(t *testing.T) *bun.DB {
			sqldb, err := sql.Open("mysql", "root@tcp("+closedPort(t)+")/test?timeout=2s&parseTime=true")
			if err != nil {
				t.Fatal(err)
			}
			return bun.NewDB(sqldb, mysqldialect.New())
		}},
		{"SQLiteClosedHandle", func(t *testing.T) *bun.DB {
			db := openMemory(t)
			_ = db.Close()
			return db
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := tc.open(t)
			t.Cleanup(func() { _ = db.Close() })
			s := bunstore.New(db)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			calls := map[string]error{}
			_, calls["CreatePet"] = s.CreatePet(ctx, petstore.NewPet{Name: "x", CategoryID: 1})
			_, calls["GetPet"] = s.GetPet(ctx, 1)
			_, calls["ListPets"] = s.ListPets(ctx, petstore.PetQuery{Limit: 1})
			calls["CreateKey"] = s.CreateKey(ctx, petstore.APIKey{ID: "k", ProjectID: "p", Plan: petstore.PlanFree}, "h")
			_, calls["UpsertKey"] = s.UpsertKey(ctx, petstore.APIKey{ID: "k", ProjectID: "p", Plan: petstore.PlanFree}, "h")
			_, _, calls["KeyByHash"] = s.KeyByHash(ctx, "h")
			_, calls["ListKeys"] = s.ListKeys(ctx)
			_, calls["SetKeyPlan"] = s.SetKeyPlan(ctx, "k", petstore.PlanPro, petstore.Limits{})
			calls["DeleteKey"] = s.DeleteKey(ctx, "k")
			_, _, calls["CreateOnce"] = s.CreateOnce(ctx, petstore.IdempotencyRecord{Scope: "k", Key: "i"}, func(context.Context) (petstore.IdempotencyRecord, bool) { return petstore.IdempotencyRecord{}, true })
			_, calls["GetIdempotencyKey"] = s.GetIdempotencyKey(ctx, "k", "i")
			calls["PutBlob"] = s.PutBlob(ctx, "b", []byte("v"))
			_, calls["ListBlobs"] = s.ListBlobs(ctx, "")
			_, calls["TryLock"] = s.TryLock(ctx, "l", "o", time.Now(), time.Now().Add(time.Minute))
			_, calls["DomainByName"] = s.DomainByName(ctx, "shop.example.com")
			_, calls["DueDomains"] = s.DueDomains(ctx, time.Now(), 10)
			_, calls["DomainConfig"] = s.DomainConfig(ctx, "prj")
			calls["Migrate"] = bunstore.Migrate(ctx, db)
			_, calls["Authenticate"] = petstore.NewKeys(s).Authenticate(ctx, "psk_x")
			for name, err := range calls {
				if got := petstore.ErrorCode(err); got != petstore.CodeUnavailable {
					t.Errorf("%s: code %q (%v), want unavailable", name, got, err)
					continue
				}
				msg := petstore.ErrorMessage(err)
				for _, leak := range []string{"127.0.0.1", "dial", "refused", "sql", "pgx", "mysql", "closed"} {
					if strings.Contains(strings.ToLower(msg), leak) {
						t.Errorf("%s: message %q leaks %q", name, msg, leak)
					}
				}
				// The cause stays reachable for logs.
				if !strings.Contains(fmt.Sprint(err), "bunstore:") {
					t.Errorf("%s: error %q lost its cause", name, err)
				}
			}
		})
	}
}
