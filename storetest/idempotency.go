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

	t.Run("ClaimCompleteGet", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		r := rec("key_a", "k1")
		got, claimed, err := s.ClaimIdempotencyKey(ctx, r)
		if err != nil || !claimed {
			t.Fatalf("first claim = %v, %v; want claimed", claimed, err)
		}
		sameRecord(t, got, r)
		again := r
		again.RequestHash = "other"
		got, claimed, err = s.ClaimIdempotencyKey(ctx, again)
		if err != nil || claimed {
			t.Fatalf("second claim = %v, %v; want the stored record", claimed, err)
		}
		sameRecord(t, got, r)

		done := r
		done.Completed, done.Status, done.ContentType, done.Location = true, 201, "application/json", "/v1/pets/7"
		done.Body = []byte(`{"id":7,"name":"Rex 🐕","categoryId":1}`)
		if err := s.CompleteIdempotencyKey(ctx, done); err != nil {
			t.Fatal(err)
		}
		got, err = s.GetIdempotencyKey(ctx, "key_a", "k1")
		if err != nil {
			t.Fatal(err)
		}
		sameRecord(t, got, done)
		got, claimed, err = s.ClaimIdempotencyKey(ctx, r)
		if err != nil || claimed {
			t.Fatalf("claim after completion = %v, %v", claimed, err)
		}
		sameRecord(t, got, done)
	})
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		_, err := s.GetIdempotencyKey(ctx, "key_a", "nope")
		wantCode(t, err, petstore.CodeNotFound)
		wantCode(t, s.CompleteIdempotencyKey(ctx, rec("key_a", "nope")), petstore.CodeNotFound)
		if err := s.ReleaseIdempotencyKey(ctx, "key_a", "nope"); err != nil {
			t.Fatalf("release of a missing key: %v", err)
		}
	})
	t.Run("ScopedPerAPIKey", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		for _, scope := range []string{"key_a", "key_b"} {
			if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec(scope, "shared")); err != nil || !claimed {
				t.Fatalf("claim in scope %s = %v, %v; want claimed", scope, claimed, err)
			}
		}
	})
	t.Run("KeysAreExact", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		// Keys differing only in case or trailing space are different keys,
		// whatever the database's collation does.
		for _, k := range []string{"abc", "ABC", "abc ", "a\\b'c\"%_", string(bytes.Repeat([]byte("x"), petstore.MaxIdempotencyKeyLength))} {
			if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec("key_a", k)); err != nil || !claimed {
				t.Fatalf("claim %q = %v, %v; want claimed", k, claimed, err)
			}
		}
	})
	t.Run("ReleaseOnlyInFlight", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		r := rec("key_a", "rel")
		if _, _, err := s.ClaimIdempotencyKey(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseIdempotencyKey(ctx, "key_a", "rel"); err != nil {
			t.Fatal(err)
		}
		if _, claimed, err := s.ClaimIdempotencyKey(ctx, r); err != nil || !claimed {
			t.Fatalf("claim after release = %v, %v; want claimed", claimed, err)
		}
		done := r
		done.Completed, done.Status = true, 400
		if err := s.CompleteIdempotencyKey(ctx, done); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseIdempotencyKey(ctx, "key_a", "rel"); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetIdempotencyKey(ctx, "key_a", "rel")
		if err != nil || !got.Completed || got.Status != 400 {
			t.Fatalf("completed record after release = %+v, %v; want kept", got, err)
		}
	})
	t.Run("PurgeOlderThan", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		old := rec("key_a", "old")
		old.CreatedAt = now.Add(-25 * time.Hour)
		young := rec("key_a", "young")
		for _, r := range []petstore.IdempotencyRecord{old, young} {
			if _, _, err := s.ClaimIdempotencyKey(ctx, r); err != nil {
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
	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		const n = 32
		var wins atomic.Int32
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				r := rec("key_a", "race")
				r.RequestHash = fmt.Sprint("h", i)
				_, claimed, err := s.ClaimIdempotencyKey(ctx, r)
				if claimed {
					wins.Add(1)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("claim %d: %v", i, err)
			}
		}
		if got := wins.Load(); got != 1 {
			t.Fatalf("%d concurrent claims won, want exactly 1", got)
		}
	})
	t.Run("TakeOverStale", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		lease := 2 * time.Minute
		staleBefore := now.Add(-lease)
		claim := func(key string, age time.Duration, complete bool) {
			t.Helper()
			r := rec("key_a", key)
			r.CreatedAt = now.Add(-age)
			if _, claimed, err := s.ClaimIdempotencyKey(ctx, r); err != nil || !claimed {
				t.Fatalf("claim %s = %v, %v", key, claimed, err)
			}
			if complete {
				r.Completed, r.Status = true, 201
				if err := s.CompleteIdempotencyKey(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		claim("fresh", time.Minute, false)
		claim("done", 3*time.Minute, true)
		for _, key := range []string{"fresh", "done", "missing"} {
			took, err := s.TakeOverIdempotencyKey(ctx, rec("key_a", key), staleBefore)
			if err != nil || took {
				t.Fatalf("take over %s = %v, %v; want left alone", key, took, err)
			}
		}
		if got, err := s.GetIdempotencyKey(ctx, "key_a", "done"); err != nil || !got.Completed || got.Status != 201 {
			t.Fatalf("completed record after a takeover attempt = %+v, %v", got, err)
		}

		// Two (and more) retries race to take over a crashed claim:
		// exactly one may run the request again.
		claim("crashed", 3*time.Minute, false)
		const n = 8
		var wins atomic.Int32
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				r := rec("key_a", "crashed")
				r.RequestHash = "h-retry"
				took, err := s.TakeOverIdempotencyKey(ctx, r, staleBefore)
				if took {
					wins.Add(1)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("takeover %d: %v", i, err)
			}
		}
		if got := wins.Load(); got != 1 {
			t.Fatalf("%d concurrent takeovers won, want exactly 1", got)
		}
		want := rec("key_a", "crashed")
		want.RequestHash = "h-retry"
		got, err := s.GetIdempotencyKey(ctx, "key_a", "crashed")
		if err != nil {
			t.Fatal(err)
		}
		sameRecord(t, got, want)
	})
	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := idem(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.ClaimIdempotencyKey(cctx, rec("key_a", "c")); err == nil {
			t.Fatal("claim with a canceled context succeeded")
		}
		_, err := s.GetIdempotencyKey(ctx, "key_a", "c")
		wantCode(t, err, petstore.CodeNotFound)
	})
}
