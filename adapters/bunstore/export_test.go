package bunstore

import (
	"context"

	"github.com/petstorekit/petstore"
)

// GetPetUncached and ListPetsUncached are the reads without SQLite's read
// cache, for benchmarks that set the two side by side.
func GetPetUncached(s *Store, ctx context.Context, id int64) (petstore.Pet, error) {
	return s.getPet(ctx, id)
}

func ListPetsUncached(s *Store, ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	return s.listPets(ctx, q)
}
