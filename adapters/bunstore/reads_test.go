package bunstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// TestReadYourWritesUnderLoad: on every database, readers keep asking for
// the same page and the same pet, so that SQLite answers from memory and
// the others share queries among reads in flight; a writer that created a
// pet finds it in its very next read of that page, and fetches it,
// whatever the readers had in memory or in flight.
func TestReadYourWritesUnderLoad(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := bunstore.New(b.open(t))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seed, err := s.CreatePet(ctx, petstore.NewPet{Name: "seed", CategoryID: 1})
			if err != nil {
				t.Fatal(err)
			}
			all := petstore.PetQuery{Limit: 1000}
			var readers sync.WaitGroup
			for range 8 {
				readers.Go(func() {
					for ctx.Err() == nil {
						if _, err := s.ListPets(ctx, all); err != nil && ctx.Err() == nil {
							t.Error(err)
							return
						}
						if _, err := s.GetPet(ctx, seed.ID); err != nil && ctx.Err() == nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var writers sync.WaitGroup
			for w := range 4 {
				writers.Go(func() {
					for i := range 15 {
						p, err := s.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprintf("w%d-%d", w, i), CategoryID: 1})
						if err != nil {
							t.Error(err)
							return
						}
						pets, err := s.ListPets(ctx, all)
						if err != nil || !slices.Contains(pets, p) {
							t.Errorf("the page read after creating %+v lacks it (%d pets, %v)", p, len(pets), err)
							return
						}
						if got, err := s.GetPet(ctx, p.ID); err != nil || got != p {
							t.Errorf("GetPet(%d) after creating it = %+v, %v", p.ID, got, err)
							return
						}
					}
				})
			}
			writers.Wait()
			cancel()
			readers.Wait()
		})
	}
}

// TestListedPagesAreTheCallersOwn: reads of one page in flight together
// share a query (flights.go), but each caller gets a slice of its own, so
// one caller's writes to its page never reach another's.
func TestListedPagesAreTheCallersOwn(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := bunstore.New(b.open(t))
			ctx := context.Background()
			for i := range 3 {
				if _, err := s.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprintf("p%d", i), CategoryID: 1}); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						pets, err := s.ListPets(ctx, petstore.PetQuery{Limit: 10})
						if err != nil {
							t.Error(err)
							return
						}
						if pets[0].Name != "p0" {
							t.Errorf("reader %d got %q as pet %d's name: another caller's write", g, pets[0].Name, pets[0].ID)
							return
						}
						pets[0].Name = fmt.Sprintf("written by %d/%d", g, i)
					}
				})
			}
			wg.Wait()
		})
	}
}
