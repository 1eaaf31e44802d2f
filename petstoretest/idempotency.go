package petstoretest

import (
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// configureIdempotency turns on Idempotency-Key replay when the store
// keeps idempotency records, as production does.
func configureIdempotency(cfg *httpx.Config, store petstore.Store) {
	if is, ok := store.(petstore.IdempotencyStore); ok {
		cfg.Idempotency = is
	}
}
