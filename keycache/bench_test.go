package keycache_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/keycache"
)

// BenchmarkAuthenticate authenticates one key over and over on a SQLite
// file: through petstore.Keys alone (a query per call) and through the
// cache (a query per second).
func BenchmarkAuthenticate(b *testing.B) {
	keys := petstore.NewKeys(openStore(b))
	_, secret := newKey(b, keys, petstore.PlanPro)
	for _, bc := range []struct {
		name string
		auth petstore.Authenticator
	}{
		{"uncached", keys},
		{"cached", keycache.New(keys, keycache.Config{})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := bc.auth.Authenticate(ctx, secret); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
