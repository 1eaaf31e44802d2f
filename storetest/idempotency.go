package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
)

// holdCreate is how long RunIdempotency's ConcurrentCallsCreateOnce
// holds the first create while the other calls with its key arrive.
const holdCreate = 100 * time.Millisecond

// RunIdempotency checks the petstore.IdempotencyStore contract. It fails
// when the store does not implement the interface.
func RunIdempotency(t *testing.T, open Opener) {
	ctx := context.Background()
	// One store answers whether the interface is there, so a store without
	// it fails once, not once per subtest.
	if _, ok := open(t).(petstore.IdempotencyStore); !ok {
		lacks(t, "petstore.IdempotencyStore")
	}
	idem := func(t *testing.T) petstore.IdempotencyStore {
		t.Helper()
		s, ok := open(t).(petstore.IdempotencyStore)
		if !ok {
			lacks(t, "petstore.IdempotencyStore")
		}
		return s
	}
	// Millisecond precision is all the contract promises; UTC avoids
	// time-zone round trips through SQL drivers.
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := func(scope, key string) petstore.IdempotencyRecord {
		return petstore.IdempotencyRecord{Scope: scope, Key: key, RequestHash: "h-" + key, CreatedAt: now}
	}
	sameRecord := func(t *testing.T, got, want petstore.IdempotencyRecord) {
		t.Helper()
		if got.Scope != want.Scope || got.Key != want.Key || got.RequestHash != want.RequestHash ||
			!got.CreatedAt.Equal(want.CreatedAt) || got.Completed != want.Completed || got.Status != want.Status ||
			got.ContentType != want.ContentType || got.Location != want.Location || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("record = %+v\nwant %+v", got, want)
		}
	}

	// response is what a create answers: a 201 naming the pet it made.
	response := func(r petstore.IdempotencyRecord, pet petstore.Pet) petstore.IdempotencyRecord {
		r.Completed, r.Status, r.ContentType = true, 201, "application/json"
		r.Location = fmt.Sprint("/v1/pets/", pet.ID)
		r.Body = []byte(fmt.Sprintf(`{"id":%d,"name":"Rex 🐕"}`, pet.ID))
		return r
	}
	// createPet is a create that makes a pet through the store, as the
	// API's does, and keeps the response when keep is set.
	createPet := func(t *testing.T, s petstore.IdempotencyStore, r petstore.IdempotencyRecord, name string, keep bool) func(context.Context) (petstore.IdempotencyRecord, bool) {
		return func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
			pet, err := s.(petstore.PetStore).CreatePet(ctx, petstore.NewPet{Name: name})
			if err != nil {
				t.Errorf("CreatePet inside CreateOnce: %v", err)
				return r, false
			}
			return response(r, pet), keep
		}
	}
	petsNamed := func(t *testing.T, s petstore.IdempotencyStore, name string) int {
		t.Helper()
		pets, err := s.(petstore.PetStore).ListPets(ctx, petstore.PetQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pets {
			if p.Name == name {
				n++
			}
		}
		return n
	}

	t.Run("RunsOnceAndKeeps", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		r := rec("key_a", "k1")
		got, ran, err := s.CreateOnce(ctx, r, createPet(t, s, r, "once", true))
		if err != nil || !ran {
			t.Fatalf("first CreateOnce = %v, %v; want ran", ran, err)
		}
		want := got
		stored, err := s.GetIdempotencyKey(ctx, "key_a", "k1")
		if err != nil {
			t.Fatal(err)
		}
		sameRecord(t, stored, want)
		again := r
		again.RequestHash = "other"
		got, ran, err = s.CreateOnce(ctx, again, func(context.Context) (petstore.IdempotencyRecord, bool) {
			t.Error("create ran for a stored key")
			return again, true
		})
		if err != nil || ran {
			t.Fatalf("second CreateOnce = %v, %v; want the stored record", ran, err)
		}
		sameRecord(t, got, want)
		if n := petsNamed(t, s, "once"); n != 1 {
			t.Fatalf("%d pets made, want 1", n)
		}
	})
	t.Run("NotKeptWritesNothing", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		r := rec("key_a", "5xx")
		if _, ran, err := s.CreateOnce(ctx, r, createPet(t, s, r, "taken-back", false)); err != nil || !ran {
			t.Fatalf("CreateOnce = %v, %v; want ran", ran, err)
		}
		_, err := s.GetIdempotencyKey(ctx, "key_a", "5xx")
		wantCode(t, err, petstore.CodeNotFound)
		if n := petsNamed(t, s, "taken-back"); n != 0 {
			t.Fatalf("%d pets of a response not kept remain, want 0", n)
		}
		// The retry runs.
		if _, ran, err := s.CreateOnce(ctx, r, createPet(t, s, r, "taken-back", true)); err != nil || !ran {
			t.Fatalf("retry = %v, %v; want ran", ran, err)
		}
		if n := petsNamed(t, s, "taken-back"); n != 1 {
			t.Fatalf("%d pets after the retry, want 1", n)
		}
	})
	t.Run("NotKeptTakesBackOrders", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		orders, ok := s.(petstore.OrderStore)
		if !ok {
			t.Skip("the store keeps no orders")
		}
		r := rec("key_a", "order-5xx")
		if _, ran, err := s.CreateOnce(ctx, r, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
			o := petstore.NewOrder{PetID: 1}
			o.Normalize()
			if _, err := orders.CreateOrder(ctx, "prj_taken_back", o); err != nil {
				t.Errorf("CreateOrder inside CreateOnce: %v", err)
			}
			return r, false
		}); err != nil || !ran {
			t.Fatalf("CreateOnce = %v, %v; want ran", ran, err)
		}
		got, err := orders.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_taken_back", Limit: 10})
		if err != nil || len(got) != 0 {
			t.Fatalf("orders of a response not kept: %v, %v; want none", got, err)
		}
	})
	t.Run("KeepsAResponseWithoutCreation", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		r := rec("key_a", "400")
		out := r
		out.Completed, out.Status, out.ContentType = true, 400, "application/json"
		if _, ran, err := s.CreateOnce(ctx, r, func(context.Context) (petstore.IdempotencyRecord, bool) { return out, true }); err != nil || !ran {
			t.Fatalf("CreateOnce = %v, %v", ran, err)
		}
		got, err := s.GetIdempotencyKey(ctx, "key_a", "400")
		if err != nil {
			t.Fatal(err)
		}
		out.Body = []byte{} // stored empty, never absent
		sameRecord(t, got, out)
	})
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		_, err := s.GetIdempotencyKey(ctx, "key_a", "nope")
		wantCode(t, err, petstore.CodeNotFound)
	})
	t.Run("ScopedPerAPIKey", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		for _, scope := range []string{"key_a", "key_b"} {
			r := rec(scope, "shared")
			if _, ran, err := s.CreateOnce(ctx, r, func(context.Context) (petstore.IdempotencyRecord, bool) { return response(r, petstore.Pet{}), true }); err != nil || !ran {
				t.Fatalf("CreateOnce in scope %s = %v, %v; want ran", scope, ran, err)
			}
		}
	})
	t.Run("KeysAreExact", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		// Keys differing only in case or trailing space are different keys,
		// whatever the database's collation does.
		for _, k := range []string{"abc", "ABC", "abc ", "a\\b'c\"%_", string(bytes.Repeat([]byte("x"), petstore.MaxIdempotencyKeyLength))} {
			r := rec("key_a", k)
			if _, ran, err := s.CreateOnce(ctx, r, func(context.Context) (petstore.IdempotencyRecord, bool) { return response(r, petstore.Pet{}), true }); err != nil || !ran {
				t.Fatalf("CreateOnce %q = %v, %v; want ran", k, ran, err)
			}
		}
	})
	t.Run("PurgeOlderThan", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		old := rec("key_a", "old")
		old.CreatedAt = now.Add(-25 * time.Hour)
		young := rec("key_a", "young")
		for _, r := range []petstore.IdempotencyRecord{old, young} {
			if _, _, err := s.CreateOnce(ctx, r, func(context.Context) (petstore.IdempotencyRecord, bool) { return response(r, petstore.Pet{}), true }); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL))
		if err != nil || n != 1 {
			t.Fatalf("purge = %d, %v; want 1", n, err)
		}
		_, err = s.GetIdempotencyKey(ctx, "key_a", "old")
		wantCode(t, err, petstore.CodeNotFound)
		if _, err := s.GetIdempotencyKey(ctx, "key_a", "young"); err != nil {
			t.Fatalf("young record purged: %v", err)
		}
	})
	t.Run("ExpiredRecordIsReplaced", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		// Two records created long ago: "mine", used again now, and
		// "other", which the new call must leave for the purge.
		stored := map[string]petstore.IdempotencyRecord{}
		for _, k := range []string{"mine", "other"} {
			r := rec("key_a", k)
			r.CreatedAt = now.Add(-petstore.IdempotencyTTL - time.Millisecond)
			out, _, err := s.CreateOnce(ctx, r, createPet(t, s, r, "expired", true))
			if err != nil {
				t.Fatal(err)
			}
			stored[k] = out
		}
		// A record exactly IdempotencyTTL old is kept: it still answers.
		young := rec("key_a", "young")
		young.CreatedAt = now.Add(-petstore.IdempotencyTTL)
		if _, _, err := s.CreateOnce(ctx, young, createPet(t, s, young, "young", true)); err != nil {
			t.Fatal(err)
		}
		again := young
		again.CreatedAt = now
		if _, ran, err := s.CreateOnce(ctx, again, createPet(t, s, again, "young", true)); err != nil || ran {
			t.Fatalf("CreateOnce over a record IdempotencyTTL old = %v, %v; want its record", ran, err)
		}
		r := rec("key_a", "mine")
		r.RequestHash = "another request"
		got, ran, err := s.CreateOnce(ctx, r, createPet(t, s, r, "afresh", true))
		if err != nil || !ran {
			t.Fatalf("CreateOnce over an expired record = %v, %v; want ran", ran, err)
		}
		if fresh, err := s.GetIdempotencyKey(ctx, "key_a", "mine"); err != nil {
			t.Fatal(err)
		} else {
			sameRecord(t, fresh, got)
		}
		if old, err := s.GetIdempotencyKey(ctx, "key_a", "other"); err != nil {
			t.Fatalf("another expired record is gone: %v; want it left for the purge", err)
		} else {
			sameRecord(t, old, stored["other"])
		}
		if n := petsNamed(t, s, "afresh"); n != 1 {
			t.Fatalf("%d pets made over the expired record, want 1", n)
		}
	})
	// concurrentCallsCreateOnce makes 16 calls with the key "race" at once
	// and checks that they make one pet and return its record.
	concurrentCallsCreateOnce := func(t *testing.T, s petstore.IdempotencyStore) {
		const n = 16
		var runs atomic.Int32
		var wg, calling sync.WaitGroup
		calling.Add(n)
		// The first create is held while the other calls arrive, so that
		// they meet it running: a store that lets one of them run as well
		// ends the hold at once; one that makes them wait sees it end
		// after holdCreate. Without the hold the calls rarely overlap,
		// and a store that never waits would pass.
		second := make(chan struct{})
		var secondOnce sync.Once
		errs := make([]error, n)
		got := make([]petstore.IdempotencyRecord, n)
		for i := range n {
			wg.Go(func() {
				r := rec("key_a", "race")
				create := createPet(t, s, r, "raced", true)
				calling.Done()
				got[i], _, errs[i] = s.CreateOnce(ctx, r, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
					if runs.Add(1) == 1 {
						calling.Wait()
						hold := time.NewTimer(holdCreate)
						select {
						case <-second:
						case <-hold.C:
						}
						hold.Stop()
					} else {
						secondOnce.Do(func() { close(second) })
					}
					return create(ctx)
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("CreateOnce %d: %v", i, err)
			}
			sameRecord(t, got[i], got[0])
		}
		if made := petsNamed(t, s, "raced"); made != 1 {
			t.Fatalf("%d pets made by %d concurrent calls with one key (%d ran), want 1", made, n, runs.Load())
		}
	}
	// Concurrent calls with one key make one pet, whether the key is new
	// or names an expired record that each call finds and replaces.
	for _, expired := range []bool{false, true} {
		name := "ConcurrentCallsCreateOnce"
		if expired {
			name = "ConcurrentCallsOverAnExpiredRecord"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := idem(t)
			if expired {
				old := rec("key_a", "race")
				old.CreatedAt = now.Add(-petstore.IdempotencyTTL - time.Millisecond)
				if _, _, err := s.CreateOnce(ctx, old, createPet(t, s, old, "expired", true)); err != nil {
					t.Fatal(err)
				}
			}
			concurrentCallsCreateOnce(t, s)
		})
	}
	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		r := rec("key_a", "c")
		if _, _, err := s.CreateOnce(cctx, r, func(context.Context) (petstore.IdempotencyRecord, bool) { return response(r, petstore.Pet{}), true }); err == nil {
			t.Fatal("CreateOnce with a canceled context succeeded")
		}
		_, err := s.GetIdempotencyKey(ctx, "key_a", "c")
		wantCode(t, err, petstore.CodeNotFound)
	})
	runIdempotencyLimits(t, idem)
}
