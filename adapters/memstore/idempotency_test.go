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
	keep := func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true }
	for _, s := range []*memstore.Store{a, b} {
		if _, ran, err := s.CreateOnce(ctx, rec, keep); err != nil || !ran {
			t.Fatalf("CreateOnce = %v, %v; want ran in a fresh store", ran, err)
		}
	}
	if n, err := a.PurgeIdempotencyKeys(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("purge a = %d, %v; want 1", n, err)
	}
	if _, err := b.GetIdempotencyKey(ctx, "key_1", "k"); err != nil {
		t.Fatalf("purging store a removed store b's record: %v", err)
	}
}

func BenchmarkCreateOnce(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	rec := petstore.IdempotencyRecord{Scope: "key_1", RequestHash: "h", CreatedAt: time.Now()}
	for i := 0; b.Loop(); i++ {
		rec.Key = string(rune('a'+i%26)) + time.Duration(i).String()
		if _, _, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true }); err != nil {
			b.Fatal(err)
		}
	}
}
