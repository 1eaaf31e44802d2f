package memstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
)

// TestIdempotencyRecordsCapped floods a store with fresh keys: it keeps
// at most its cap of records, the newest ones, and its claim queue does
// not grow with the flood.
func TestIdempotencyRecordsCapped(t *testing.T) {
	s := New()
	s.idemRecs.max = 100
	ctx := context.Background()
	now := time.Now()
	for i := range 10_000 {
		rec := petstore.IdempotencyRecord{Scope: "key_1", Key: strconv.Itoa(i), RequestHash: "h", CreatedAt: now}
		if _, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true }); err != nil || !ran {
			t.Fatalf("CreateOnce %d: %v %v", i, ran, err)
		}
	}
	if n := len(s.idemRecs.recs); n != 100 {
		t.Fatalf("%d records kept, want the cap of 100", n)
	}
	if q := len(s.idemRecs.order) - s.idemRecs.head; q > 2*1024+100 {
		t.Fatalf("claim queue holds %d ids after the flood", q)
	}
	if _, err := s.GetIdempotencyKey(ctx, "key_1", "9999"); err != nil {
		t.Fatalf("the newest record was forgotten: %v", err)
	}
	if _, err := s.GetIdempotencyKey(ctx, "key_1", "0"); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("the oldest record is still kept: %v", err)
	}
}
