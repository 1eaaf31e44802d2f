package memstore

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
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

// TestClaimQueueFollowsPurges: below the cap, the hourly purge keeps the
// claim queue as short as the records it keeps.
func TestClaimQueueFollowsPurges(t *testing.T) {
	s := New()
	s.idemRecs.max = 100
	ctx := context.Background()
	now := time.Now()
	for day := range 2000 {
		for i := range 50 {
			rec := petstore.IdempotencyRecord{Scope: "key_1", Key: strconv.Itoa(day) + "-" + strconv.Itoa(i), RequestHash: "h", CreatedAt: now}
			if _, _, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PurgeIdempotencyKeys(ctx, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if q := len(s.idemRecs.order) - s.idemRecs.head; q > 2*1024+100 {
		t.Fatalf("claim queue holds %d ids while %d records are kept", q, len(s.idemRecs.recs))
	}
}

// TestReclaimedKeyIsForgottenAsNew: a key purged and claimed again is
// the newest record, so it is not the first forgotten at the cap.
func TestReclaimedKeyIsForgottenAsNew(t *testing.T) {
	s := New()
	s.idemRecs.max = 3
	ctx := context.Background()
	now := time.Now()
	claim := func(k string, at time.Time) {
		rec := petstore.IdempotencyRecord{Scope: "key_1", Key: k, RequestHash: "h", CreatedAt: at}
		if _, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true }); err != nil || !ran {
			t.Fatalf("CreateOnce %s: %v %v", k, ran, err)
		}
	}
	claim("A", now.Add(-25*time.Hour)) // expired
	claim("B", now)
	if _, err := s.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL)); err != nil {
		t.Fatal(err)
	}
	claim("A", now) // claimed again: newer than B
	claim("C", now)
	claim("D", now) // over the cap of 3: B is the oldest
	if _, err := s.GetIdempotencyKey(ctx, "key_1", "A"); err != nil {
		t.Fatalf("the newest claim of A was forgotten: %v (B: %v)", err, func() error { _, e := s.GetIdempotencyKey(ctx, "key_1", "B"); return e }())
	}
}

// TestCapForgetsInClaimOrder checks the cap's documented order against a
// model: the records kept are always the newest claims of the keys not
// purged, whatever mix of fresh keys, keys claimed again after the cap or
// a purge forgot them, and purges came before. Small caps and many
// operations push the claim queue through its compaction too.
func TestCapForgetsInClaimOrder(t *testing.T) {
	ctx := context.Background()
	base := time.Now()
	for _, max := range []int{1, 2, 3, 7} {
		s := New()
		s.idemRecs.max = max
		rng := rand.New(rand.NewPCG(uint64(max), 1))
		type claimed struct {
			key string
			at  time.Time
		}
		var model []claimed // live records, oldest claim first
		for step := range 20_000 {
			if rng.IntN(50) == 0 {
				before := base.Add(time.Duration(step-rng.IntN(200)) * time.Second)
				if _, err := s.PurgeIdempotencyKeys(ctx, before); err != nil {
					t.Fatal(err)
				}
				model = slices.DeleteFunc(model, func(c claimed) bool { return c.at.Before(before) })
			} else {
				k := strconv.Itoa(rng.IntN(3 * max))
				at := base.Add(time.Duration(step) * time.Second)
				rec := petstore.IdempotencyRecord{Scope: "key_1", Key: k, RequestHash: "h", CreatedAt: at}
				_, ran, err := s.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) { return rec, true })
				if err != nil {
					t.Fatal(err)
				}
				held := slices.ContainsFunc(model, func(c claimed) bool { return c.key == k })
				if ran == held {
					t.Fatalf("cap %d, step %d: CreateOnce(%s) ran = %v, but the model holds it: %v", max, step, k, ran, held)
				}
				if ran {
					model = append(model, claimed{k, at})
					if len(model) > max {
						model = model[len(model)-max:]
					}
				}
			}
			want := make([]string, 0, len(model))
			for _, c := range model {
				want = append(want, c.key)
			}
			got := slices.Collect(maps.Keys(s.idemRecs.recs))
			gotKeys := make([]string, 0, len(got))
			for _, id := range got {
				gotKeys = append(gotKeys, id.key)
			}
			slices.Sort(want)
			slices.Sort(gotKeys)
			if !slices.Equal(gotKeys, want) {
				t.Fatalf("cap %d, step %d: store keeps %v, want the newest claims %v", max, step, gotKeys, want)
			}
		}
	}
}
