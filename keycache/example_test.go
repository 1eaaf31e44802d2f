package keycache_test

import (
	"context"
	"fmt"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/keycache"
)

// NewKeys wires a key manager and a cache together: serve requests with
// the cache, manage keys with the manager. A key seen once is then
// authenticated from memory, and a revoke through the manager reaches the
// cache before Revoke returns. Pass a changefeed.Feed instead of nil, and
// run the cache's Follow on it, to tell the other processes too.
func ExampleNewKeys() {
	ctx := context.Background()
	keys, cache := keycache.NewKeys(memstore.New(), nil, keycache.Config{}, nil)
	key, secret, _ := keys.Create(ctx, "prj_demo", petstore.PlanFree, petstore.Limits{})

	for range 3 {
		_, _ = cache.Authenticate(ctx, secret)
	}
	s := cache.Stats()
	fmt.Println("store lookups:", s.Misses, "from memory:", s.Hits)

	_ = keys.Revoke(ctx, key.ID)
	_, err := cache.Authenticate(ctx, secret)
	fmt.Println("after revoke:", petstore.ErrorCode(err))
	// Output:
	// store lookups: 1 from memory: 2
	// after revoke: unauthorized
}
