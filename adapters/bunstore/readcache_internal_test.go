package bunstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun"
)

// openMigratedFile opens a migrated SQLite file, closed when t ends.
func openMigratedFile(t *testing.T) *bun.DB {
	t.Helper()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "petstore.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestReadCacheIsBounded: a client walking more cursors than the cache
// holds, and reading more pets, leaves it within its bounds.
func TestReadCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	db := openMigratedFile(t)
	if _, err := db.ExecContext(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "+
		"INSERT INTO pets (name, category_id, status) SELECT 'pet ' || x, 1, 'sold' FROM c", maxCachedPets+10); err != nil {
		t.Fatal(err)
	}
	s := New(db)
	for after := range int64(maxCachedPages + 10) {
		if _, err := s.ListPets(ctx, petstore.PetQuery{AfterID: after, Limit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(1); id <= maxCachedPets+10; id++ {
		if _, err := s.GetPet(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.reads.mu.Lock()
	pages, pets := len(s.reads.pages), len(s.reads.pets)
	s.reads.mu.Unlock()
	if pages == 0 || pages > maxCachedPages || pets == 0 || pets > maxCachedPets {
		t.Fatalf("the cache holds %d pages and %d pets; want 1..%d and 1..%d", pages, pets, maxCachedPages, maxCachedPets)
	}
}

// TestReadCacheWaitEndsWithTheContext: a read waiting for a look at the
// counters while the pool is exhausted gives up when its context ends,
// and the look it was to run still runs once the pool frees.
func TestReadCacheWaitEndsWithTheContext(t *testing.T) {
	ctx := context.Background()
	db := openMigratedFile(t)
	s := New(db)
	db.DB.SetMaxOpenConns(1)
	hold, err := db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	looks := &s.reads.looks
	waitFor := func(what string, cond func(slot *flightSlot[uint64]) bool) {
		t.Helper()
		waitUntil(t, &looks.mu, what, func() bool { return cond(looks.slots[struct{}{}]) })
	}
	first := make(chan error, 1)
	go func() { _, err := s.ListPets(ctx, petstore.PetQuery{Limit: 1}); first <- err }()
	waitFor("the first read's look running", func(slot *flightSlot[uint64]) bool { return slot != nil && slot.running != nil })

	rctx, cancel := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() { _, err := s.ListPets(rctx, petstore.PetQuery{Limit: 1}); second <- err }()
	waitFor("the second read waiting for the next look", func(slot *flightSlot[uint64]) bool { return slot != nil && slot.next != nil })
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("the canceled read returned %v, want context.Canceled", err)
	}
	if err := hold.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first read, once the pool freed: %v", err)
	}
	waitFor("the looks done", func(slot *flightSlot[uint64]) bool { return slot == nil })
	if _, err := s.ListPets(ctx, petstore.PetQuery{Limit: 1}); err != nil {
		t.Fatal(err)
	}
}
