package bunstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// The SQLite store answers unchanged reads from memory (readcache.go).
// These tests change the database in every way a deployment can, between
// reads the cache could have answered, and expect each change in the very
// next read.

// readTwice reads the page and the pet twice, so that the second reads
// could come from memory.
func readTwice(t *testing.T, s *bunstore.Store, id int64) ([]petstore.Pet, petstore.Pet) {
	t.Helper()
	ctx := context.Background()
	var pets []petstore.Pet
	var pet petstore.Pet
	for range 2 {
		var err error
		if pets, err = s.ListPets(ctx, petstore.PetQuery{Limit: 100}); err != nil {
			t.Fatal(err)
		}
		if pet, err = s.GetPet(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	return pets, pet
}

func createPet(t *testing.T, s *bunstore.Store, name string) petstore.Pet {
	t.Helper()
	p, err := s.CreatePet(context.Background(), petstore.NewPet{Name: name, CategoryID: 1, Status: petstore.StatusAvailable})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSQLiteReadsSeeAnotherProcesssChanges: two handles on one file stand
// for two processes. A pet one creates is in the other's next page, and a
// row changed by hand through the other handle is read again.
func TestSQLiteReadsSeeAnotherProcesssChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := bunstore.New(migrated(t, openFileAt(t, path)))
	dbB := openFileAt(t, path)
	b := bunstore.New(dbB)
	first := createPet(t, a, "first")
	// More rounds than A has pooled connections, so that the reads land
	// on connections that have and have not looked before.
	for i := range 12 {
		readTwice(t, a, first.ID)
		p := createPet(t, b, fmt.Sprintf("pet %d", i))
		pets, _ := readTwice(t, a, first.ID)
		if got := pets[len(pets)-1]; got != p {
			t.Fatalf("round %d: A's next page ends with %+v, want B's new pet %+v", i, got, p)
		}
		name := fmt.Sprintf("renamed %d", i)
		if _, err := dbB.ExecContext(context.Background(), "UPDATE pets SET name = ? WHERE id = ?", name, first.ID); err != nil {
			t.Fatal(err)
		}
		pets, pet := readTwice(t, a, first.ID)
		if pet.Name != name || pets[0].Name != name {
			t.Fatalf("round %d: after B renamed pet %d to %q, A reads %q and its page %q", i, first.ID, name, pet.Name, pets[0].Name)
		}
	}
}

// TestSQLiteReadsSeeChangesThroughTheSameDB: a change made through the
// store's own *bun.DB but not through the store (an operator's tool, a
// migration) is read again too, whichever pooled connection made it.
func TestSQLiteReadsSeeChangesThroughTheSameDB(t *testing.T) {
	db := openFile(t)
	s := bunstore.New(db)
	p := createPet(t, s, "rex")
	for i := range 12 {
		readTwice(t, s, p.ID)
		name := fmt.Sprintf("rex %d", i)
		if _, err := db.ExecContext(context.Background(), "UPDATE pets SET name = ? WHERE id = ?", name, p.ID); err != nil {
			t.Fatal(err)
		}
		pets, pet := readTwice(t, s, p.ID)
		if pet.Name != name || pets[0].Name != name {
			t.Fatalf("round %d: renamed to %q, read %q and page %q", i, name, pet.Name, pets[0].Name)
		}
	}
}
