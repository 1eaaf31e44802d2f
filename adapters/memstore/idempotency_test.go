package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// The conformance suite (TestConformance) covers the contract; this checks
// what is particular to the memory store: each store has its own records.
func TestIdempotencyRecordsArePerStore(t *testing.T) {
	ctx := context.Background()
	a, b := memstore.New(), memstore.New()
	rec := petstore.IdempotencyRecord{Scope: "key_1", Key: "k", RequestHash: "h", CreatedAt: time.Now()}
	for _, s := range []*memstore.Store{a, b} {
		if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec); err != nil || !claimed {
			t.Fatalf("claim = %v, %v; want claimed in a fresh store", claimed, err)
		}
	}
	if n, err := a.PurgeIdempotencyKeys(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("purge a = %d, %v; want 1", n, err)
	}
	if _, err := b.GetIdempotencyKey(ctx, "key_1", "k"); err != nil {
		t.Fatalf("purging store a removed store b's record: %v", err)
	}
}

func BenchmarkClaimIdempotencyKey(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	rec := petstore.IdempotencyRecord{Scope: "key_1", RequestHash: "h", CreatedAt: time.Now()}
	for i := 0; b.Loop(); i++ {
		rec.Key = string(rune('a'+i%26)) + time.Duration(i).String()
		if _, _, err := s.ClaimIdempotencyKey(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}
