package bunstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore"
)

// TestReadCacheIsBounded: a client walking more cursors than the cache
// holds, and reading more pets, leaves it within its bounds.
func TestReadCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "bounded.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
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
