package bunstore

import (
	"context"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun/schema"
)

// GetPetUncached and ListPetsUncached are the reads without SQLite's read
// cache, for benchmarks that set the two side by side.
func GetPetUncached(s *Store, ctx context.Context, id int64) (petstore.Pet, error) {
	return s.getPet(ctx, id)
}

func ListPetsUncached(s *Store, ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	return s.listPets(ctx, q)
}

// NativeReads reports whether the store's reads have run natively on its
// connections (native.go).
func NativeReads(s *Store) bool { return s.native.Load() == nativeYes }

// WithoutNativeReads makes s read through its prepared statements even
// where its connections could run the reads natively, for benchmarks that
// set the two side by side.
func WithoutNativeReads(s *Store) *Store {
	s.native.Store(nativeNo)
	return s
}

// DBNowSQL is the SQL expression of the database's clock in Unix
// nanoseconds, as an earlier version wrote it into webhook rows.
func DBNowSQL(db interface{ Dialect() schema.Dialect }) string { return dbNowSQL(db.Dialect().Name()) }
