package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/storetest"
	"github.com/uptrace/bun"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			open := func(t testing.TB) petstore.Store { return bunstore.New(b.open(t)) }
			// The webhook and blob suites move a fake clock to end leases
			// and locks.
			openCallerClock := func(t testing.TB) petstore.Store { return bunstore.New(b.open(t), bunstore.CallerClock()) }
			storetest.Run(t, open)
			t.Run("Idempotency", func(t *testing.T) { storetest.RunIdempotency(t, open) })
			t.Run("Orders", func(t *testing.T) { storetest.RunOrders(t, open) })
			t.Run("Blobs", func(t *testing.T) { storetest.RunBlobs(t, openCallerClock) })
			t.Run("Domains", func(t *testing.T) { storetest.RunDomains(t, open) })
			t.Run("Webhooks", func(t *testing.T) { storetest.RunWebhooks(t, openCallerClock) })
			t.Run("WebhooksOnOneClock", func(t *testing.T) {
				t.Parallel()
				storetest.RunWebhooksOnOneClock(t, open)
			})
		})
	}
}

func TestMigrateTwiceIsNoop(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t) // migrated once
			ctx := context.Background()
			applied, err := db.NewSelect().Table("petstore_migrations").Count(ctx)
			if err != nil || applied == 0 {
				t.Fatalf("%d migration records, %v; want some", applied, err)
			}
			s := bunstore.New(db)
			p, err := s.CreatePet(ctx, petstore.NewPet{Name: "kept", CategoryID: 1})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := bunstore.Migrate(ctx, db); err != nil {
					t.Fatalf("Migrate again: %v", err)
				}
			}
			if got, err := s.GetPet(ctx, p.ID); err != nil || got != p {
				t.Fatalf("after migrating again: %+v, %v; want %+v", got, err, p)
			}
			n, err := db.NewSelect().Table("petstore_migrations").Count(ctx)
			if err != nil || n != applied {
				t.Fatalf("%d migration records, %v; want still %d", n, err, applied)
			}
		})
	}
}

func TestSchemaRejectsUnknownStatus(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t)
			_, err := db.ExecContext(context.Background(),
				"INSERT INTO pets (name, category_id, status) VALUES ('x', 1, 'lost')")
			if err == nil {
				t.Fatal("a pet with status 'lost' was stored; want the CHECK constraint to refuse it")
			}
		})
	}
}

func TestMemoryDatabasesArePrivate(t *testing.T) {
	ctx := context.Background()
	a, b := bunstore.New(openMemory(t)), bunstore.New(openMemory(t))
	if _, err := a.CreatePet(ctx, petstore.NewPet{Name: "only in a", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	pets, err := b.ListPets(ctx, petstore.PetQuery{Limit: 10})
	if err != nil || len(pets) != 0 {
		t.Fatalf("second in-memory database lists %v, %v; want nothing", pets, err)
	}
}

// TestFileConcurrentWriters runs two handles on one file, as two processes
// would, each with many goroutines writing pets and keys at once: every
// write must succeed, never "database is locked".
func TestFileConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	ctx := context.Background()
	var stores []*bunstore.Store
	for range 2 {
		db, err := bunstore.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if err := bunstore.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, bunstore.New(db))
	}
	const goroutines, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines*each)
	for i := range 2 * goroutines {
		s := stores[i%2]
		keys := petstore.NewKeys(s)
		wg.Go(func() {
			for j := range each {
				if _, err := s.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprint("w", i, "-", j), CategoryID: 1, Status: petstore.StatusSold}); err != nil {
					errs <- err
				}
				// The same operator key from every goroutine: upserts race.
				if _, err := keys.Ensure(ctx, "psk_Shared5nR8wK2qX7jL3vTb6", petstore.PlanPro, petstore.Limits{}); err != nil {
					errs <- err
				}
				if _, err := s.ListPets(ctx, petstore.PetQuery{Status: petstore.StatusSold, Limit: 5}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
	all, err := stores[0].ListPets(ctx, petstore.PetQuery{Limit: 10000})
	if err != nil || len(all) != 2*goroutines*each {
		t.Fatalf("listed %d pets, %v; want %d", len(all), err, 2*goroutines*each)
	}
	keys, err := stores[1].ListKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("ListKeys = %d keys, %v; want the one upserted key", len(keys), err)
	}
}

func TestCanceledContextReturnsContextError(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := bunstore.New(b.open(t))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := s.CreatePet(ctx, petstore.NewPet{Name: "x", CategoryID: 1})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("CreatePet = %v, want context.Canceled", err)
			}
			_, _, err = s.KeyByHash(ctx, "h")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("KeyByHash = %v, want context.Canceled", err)
			}
		})
	}
}

func TestErrorsCarryNoDriverText(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := bunstore.New(b.open(t))
			ctx := context.Background()
			key := petstore.APIKey{ID: "key_1", ProjectID: "p", Plan: petstore.PlanFree}
			if err := s.CreateKey(ctx, key, "hash-1"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				err  error
				code string
			}{
				{"duplicate id", s.CreateKey(ctx, key, "hash-2"), petstore.CodeConflict},
				{"duplicate hash", s.CreateKey(ctx, petstore.APIKey{ID: "key_2", ProjectID: "p", Plan: petstore.PlanFree}, "hash-1"), petstore.CodeConflict},
				{"missing key", s.DeleteKey(ctx, "key_missing"), petstore.CodeNotFound},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := petstore.ErrorCode(tc.err); got != tc.code {
						t.Fatalf("code = %q (%v), want %q", got, tc.err, tc.code)
					}
					msg := strings.ToLower(petstore.ErrorMessage(tc.err))
					for _, leak := range []string{"sql", "constraint", "duplicate", "error 1062", "23505"} {
						if strings.Contains(msg, leak) {
							t.Fatalf("message %q leaks %q", msg, leak)
						}
					}
				})
			}
		})
	}
}

// TestConcurrentMigrate runs Migrate from several handles at once on one
// fresh database, as replicas starting together would: every run succeeds
// and, where a lock is available, each migration is recorded once.
func TestConcurrentMigrate(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t *testing.T) string
		once bool
	}{
		{"SQLiteFile", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "m.db") }, false},
		{"PostgreSQL", func(t *testing.T) string { return testenv.PostgresSchema(t) }, true},
		{"MariaDB", func(t *testing.T) string { return testenv.MySQLDatabase(t) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := tc.dsn(t)
			ctx := context.Background()
			var dbs []*bun.DB
			for range 4 {
				db, err := bunopen.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				dbs = append(dbs, db)
			}
			var wg sync.WaitGroup
			errs := make([]error, len(dbs))
			for i, db := range dbs {
				wg.Go(func() { errs[i] = bunstore.Migrate(ctx, db) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("Migrate %d: %v", i, err)
				}
			}
			if _, err := bunstore.New(dbs[0]).CreatePet(ctx, petstore.NewPet{Name: "x", CategoryID: 1}); err != nil {
				t.Fatal(err)
			}
			var total, distinct int
			err := dbs[0].QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT name) FROM petstore_migrations").Scan(&total, &distinct)
			if err != nil {
				t.Fatal(err)
			}
			if tc.once && total != distinct {
				t.Fatalf("%d migration records for %d migrations: applied more than once", total, distinct)
			}
		})
	}
}

// TestColumnsALaterVersionAddsAreIgnored: during a rolling upgrade, a
// replica of this version runs on a schema that a later version's
// migrations have grown. Every store contract still holds with an extra
// column in every table.
func TestColumnsALaterVersionAddsAreIgnored(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name   string
		open   func(testing.TB) *bun.DB
		tables string
	}{
		{"SQLiteMemory", openMemory, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`},
		{"PostgreSQL", openPostgres, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			grown := func(t testing.TB) *bun.DB {
				db := b.open(t)
				ctx := context.Background()
				var tables []string
				if err := db.NewRaw(b.tables).Scan(ctx, &tables); err != nil {
					t.Fatal(err)
				}
				if len(tables) < 5 {
					t.Fatalf("tables to grow: %v", tables)
				}
				for _, table := range tables {
					if _, err := db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN added_later INTEGER DEFAULT 7"); err != nil {
						t.Fatalf("grow %s: %v", table, err)
					}
				}
				return db
			}
			open := func(t testing.TB) petstore.Store { return bunstore.New(grown(t)) }
			openCallerClock := func(t testing.TB) petstore.Store { return bunstore.New(grown(t), bunstore.CallerClock()) }
			storetest.Run(t, open)
			t.Run("Idempotency", func(t *testing.T) { storetest.RunIdempotency(t, open) })
			t.Run("Orders", func(t *testing.T) { storetest.RunOrders(t, open) })
			t.Run("Blobs", func(t *testing.T) { storetest.RunBlobs(t, openCallerClock) })
			t.Run("Domains", func(t *testing.T) { storetest.RunDomains(t, open) })
			t.Run("Webhooks", func(t *testing.T) { storetest.RunWebhooks(t, openCallerClock) })
		})
	}
}
