package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// TestConcurrentWritesStayIndependent runs, at once, creates of valid pets,
// creates the schema refuses, creates whose context is already canceled,
// and creations under one Idempotency-Key. On SQLite these share transactions,
// and the outcome must be what each would get alone: every valid pet is
// stored and listed, every refused or canceled one fails without taking
// the others down, and exactly one creation under the key runs.
func TestConcurrentWritesStayIndependent(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := bunstore.New(b.open(t))
			ctx := context.Background()
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			const each = 24
			var wg sync.WaitGroup
			var mu sync.Mutex
			var created []petstore.Pet
			var wins int
			hashes := map[string]int{}
			for i := range each {
				wg.Go(func() {
					p, err := s.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprint("pet ", i), CategoryID: 1, Status: petstore.StatusPending})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("CreatePet %d: %v", i, err)
						return
					}
					created = append(created, p)
				})
				wg.Go(func() {
					if _, err := s.CreatePet(ctx, petstore.NewPet{Name: "lost", CategoryID: 1, Status: "lost"}); err == nil {
						t.Errorf("a pet with status 'lost' was stored")
					}
				})
				wg.Go(func() {
					if _, err := s.CreatePet(canceled, petstore.NewPet{Name: "canceled", CategoryID: 1}); !errors.Is(err, context.Canceled) {
						t.Errorf("CreatePet with a canceled context = %v, want context.Canceled", err)
					}
				})
				wg.Go(func() {
					rec := petstore.IdempotencyRecord{Scope: "key_1", Key: "order-1", RequestHash: fmt.Sprint("h", i), CreatedAt: time.Now()}
					stored, ran, err := s.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
						p, err := s.CreatePet(ctx, petstore.NewPet{Name: "once", CategoryID: 1})
						rec.Completed, rec.Status = true, 201
						return rec, err == nil && p.ID > 0
					})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("CreateOnce %d: %v", i, err)
						return
					}
					if ran {
						wins++
					}
					hashes[stored.RequestHash]++
				})
			}
			wg.Wait()
			if wins != 1 || len(hashes) != 1 {
				t.Errorf("%d claims won, stored hashes %v; want one winner that every claim sees", wins, hashes)
			}
			pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			once := 0
			for _, p := range pets {
				if p.Name == "once" {
					once++
				}
			}
			if once != 1 || len(pets) != each+1 || len(created) != each {
				t.Fatalf("listed %d pets, created %d; want %d", len(pets), len(created), each)
			}
			ids := map[int64]bool{}
			for _, p := range pets {
				ids[p.ID] = true
			}
			for _, p := range created {
				if got, err := s.GetPet(ctx, p.ID); err != nil || got != p || !ids[p.ID] {
					t.Errorf("created %+v, read back %+v, %v (listed: %t)", p, got, err, ids[p.ID])
				}
			}
		})
	}
}

// TestCreateOncePanicLeavesNothing: a create that panics (a bug in a
// handler) writes nothing, its panic reaches the caller, and the store
// keeps working: on SQLite the group commit is not left held.
func TestCreateOncePanicLeavesNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := bunstore.New(b.open(t))
			ctx := context.Background()
			rec := petstore.IdempotencyRecord{Scope: "key_p", Key: "k", RequestHash: "h", CreatedAt: time.Now()}
			func() {
				defer func() {
					if p := recover(); p != "handler bug" {
						t.Errorf("recovered %v, want the create's panic", p)
					}
				}()
				_, _, _ = s.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
					if _, err := s.CreatePet(ctx, petstore.NewPet{Name: "half", CategoryID: 1}); err != nil {
						t.Error(err)
					}
					panic("handler bug")
				})
			}()
			if _, err := s.GetIdempotencyKey(ctx, "key_p", "k"); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Fatalf("record after a panic: %v, want not_found", err)
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if _, err := s.CreatePet(wctx, petstore.NewPet{Name: "after", CategoryID: 1}); err != nil {
				t.Fatalf("a write after the panic: %v", err)
			}
			pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
			if err != nil || len(pets) != 1 || pets[0].Name != "after" {
				t.Fatalf("pets %+v, %v; want only the one made after the panic", pets, err)
			}
		})
	}
}

// On SQLite an idempotent create runs inside the group commit, beside
// other requests' writes: a client that hangs up halfway must not roll
// the group back (which would fail every write in it), so its create
// completes and its record keeps the answer for a retry.
func TestCreateOnceOutlivesItsClientOnSQLite(t *testing.T) {
	s := bunstore.New(openFile(t))
	ctx, cancel := context.WithCancel(context.Background())
	rec := petstore.IdempotencyRecord{Scope: "key_gone", Key: "k", RequestHash: "h", CreatedAt: time.Now()}
	_, _, err := s.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
		if _, err := s.CreatePet(ctx, petstore.NewPet{Name: "kept", CategoryID: 1}); err != nil {
			t.Error(err)
		}
		cancel() // the client hangs up before the record is completed
		rec.Status = 201
		return rec, true
	})
	if err != nil {
		t.Fatalf("CreateOnce after its client hung up: %v", err)
	}
	got, err := s.GetIdempotencyKey(context.Background(), "key_gone", "k")
	if err != nil || got.Status != 201 {
		t.Fatalf("record %+v, %v; want the completed answer", got, err)
	}
}
