package bunstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// A service over a SQLite file: open, migrate (once per deployment), build
// the store, serve. Pets survive a restart because they are in the file.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "petstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := bunstore.OpenSQLite(filepath.Join(dir, "petstore.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := bunstore.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	svc := petstore.NewService(bunstore.New(db))

	for _, name := range []string{"Rex", "Tom", "Kitty"} {
		if _, err := svc.CreatePet(ctx, petstore.NewPet{Name: name, CategoryID: 1, Status: petstore.StatusAvailable}); err != nil {
			log.Fatal(err)
		}
	}
	page, err := svc.ListPets(ctx, petstore.PetFilter{Limit: 2, Status: petstore.StatusAvailable})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Pets, page.NextCursor != "")
	page, _ = svc.ListPets(ctx, petstore.PetFilter{Limit: 2, Status: petstore.StatusAvailable, Cursor: page.NextCursor})
	fmt.Println(page.Pets, page.NextCursor != "")
	// Output:
	// [{1 Rex 1 available} {2 Tom 1 available}] true
	// [{3 Kitty 1 available}] false
}
