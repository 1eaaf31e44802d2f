package bunstore_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the plain "pgx" driver, for the handle without QueryRows
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestPostgresReadsNativeOrNot: the same reads answer the same on a
// bunopen handle, whose connections run them natively over pgx, and on a
// plain database/sql "pgx" handle, whose connections cannot and which
// keeps the prepared statements.
func TestPostgresReadsNativeOrNot(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	target, err := bunopen.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	native := openDSN(t, dsn) // migrates
	sqldb, err := sql.Open("pgx", target.DriverDSN)
	if err != nil {
		t.Fatal(err)
	}
	plainDB := bun.NewDB(sqldb, pgdialect.New())
	t.Cleanup(func() { _ = plainDB.Close() })

	writer := bunstore.New(native)
	var created []petstore.Pet
	for _, np := range []petstore.NewPet{
		{Name: "Rex", CategoryID: 1, Status: petstore.StatusSold},
		{Name: `Ünïcode "quoted"`, CategoryID: 2},
		{Name: "Tom", CategoryID: 3, Status: petstore.StatusPending},
	} {
		p, err := writer.CreatePet(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
	}
	for _, tc := range []struct {
		name   string
		store  *bunstore.Store
		native bool
	}{{"bunopen", bunstore.New(native), true}, {"plain database/sql", bunstore.New(plainDB), false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store
			for _, want := range created {
				if got, err := s.GetPet(ctx, want.ID); err != nil || got != want {
					t.Fatalf("GetPet(%d) = %+v, %v; want %+v", want.ID, got, err, want)
				}
			}
			if _, err := s.GetPet(ctx, 1<<40); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("GetPet of a missing id: %v, want not_found", err)
			}
			all, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
			if err != nil || len(all) != 3 || all[0] != created[0] || all[1] != created[1] || all[2] != created[2] {
				t.Fatalf("ListPets = %+v, %v; want %+v", all, err, created)
			}
			pending, err := s.ListPets(ctx, petstore.PetQuery{Status: petstore.StatusPending, Limit: 10})
			if err != nil || len(pending) != 1 || pending[0] != created[2] {
				t.Fatalf("ListPets(pending) = %+v, %v; want only %+v", pending, err, created[2])
			}
			after, err := s.ListPets(ctx, petstore.PetQuery{AfterID: created[0].ID, Limit: 1})
			if err != nil || len(after) != 1 || after[0] != created[1] {
				t.Fatalf("ListPets(after %d, limit 1) = %+v, %v; want %+v", created[0].ID, after, err, created[1])
			}
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.ListPets(canceled, petstore.PetQuery{Limit: 10}); !errors.Is(err, context.Canceled) {
				t.Fatalf("ListPets with a canceled context: %v, want context.Canceled", err)
			}
			if got := bunstore.NativeReads(s); got != tc.native {
				t.Fatalf("reads ran natively: %v, want %v", got, tc.native)
			}
		})
	}
}

// TestPostgresNativeReadsUnderFaults: with the database behind a proxy,
// a native read against a paused database ends with its context, one
// against a crashed database is unavailable, and reads work again once
// the database is back, on a new connection.
func TestPostgresNativeReadsUnderFaults(t *testing.T) {
	proxy, dsn := faultproxy.StartFor(t, testenv.PostgresSchema(t))
	db := openDSN(t, dsn) // migrated through the proxy
	// One connection, so that after a fault no other idle one, broken
	// by it too, is handed out: the recovery checked is the one read's.
	db.DB.SetMaxOpenConns(1)
	s := bunstore.New(db)
	ctx := context.Background()
	pet, err := s.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context) error {
		if _, err := s.GetPet(ctx, pet.ID); err != nil {
			return err
		}
		_, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
		return err
	}
	if err := read(ctx); err != nil || !bunstore.NativeReads(s) {
		t.Fatalf("before any fault: %v (native %v)", err, bunstore.NativeReads(s))
	}

	proxy.Pause()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = read(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read against a paused database: %v, want its context's deadline", err)
	}
	proxy.Restore()
	if err := read(ctx); err != nil {
		t.Fatalf("the first read after the pause: %v", err)
	}

	proxy.Cut()
	if err := read(ctx); petstore.ErrorCode(err) != petstore.CodeUnavailable {
		t.Fatalf("a read against a crashed database: %v, want unavailable", err)
	}
	proxy.Restore()
	if err := read(ctx); err != nil {
		t.Fatalf("the first read after the crash: %v", err)
	}
}
