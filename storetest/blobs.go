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
	"github.com/petstorekit/petstore/adapters/acme/blobs"
)

// RunBlobs checks the blobs.Store contract. It fails when the store
// does not implement blobs.Store.
func RunBlobs(t *testing.T, open Opener) {
	ctx := context.Background()
	openBlobs := func(t *testing.T) blobs.Store {
		t.Helper()
		bs, ok := open(t).(blobs.Store)
		if !ok {
			lacks(t, "blobs.Store")
		}
		return bs
	}
	put := func(t *testing.T, s blobs.Store, key, value string) {
		t.Helper()
		if err := s.PutBlob(ctx, key, []byte(value)); err != nil {
			t.Fatalf("PutBlob(%q): %v", key, err)
		}
	}
	keys := func(t *testing.T, s blobs.Store, prefix string) string {
		t.Helper()
		infos, err := s.ListBlobs(ctx, prefix)
		if err != nil {
			t.Fatalf("ListBlobs(%q): %v", prefix, err)
		}
		if infos == nil {
			t.Fatalf("ListBlobs(%q) = nil, want a non-nil slice", prefix)
		}
		var ks []string
		for _, i := range infos {
			ks = append(ks, i.Key)
		}
		return fmt.Sprint(ks)
	}

	t.Run("PutGetOverwrite", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		before := time.Now().Add(-time.Minute)
		for _, tc := range []struct{ key, value string }{
			{"certificates/acme/example.com/example.com.crt", "-----BEGIN CERTIFICATE-----\n"},
			{"binary", "\x00\xff\x01 nul and high bytes"},
			{"empty", ""},
			{"ünïcødé/キー", "値"},
		} {
			value := []byte(tc.value)
			if err := s.PutBlob(ctx, tc.key, value); err != nil {
				t.Fatalf("PutBlob(%q): %v", tc.key, err)
			}
			if len(value) > 0 {
				value[0] ^= 0xff // the store must have kept its own copy
			}
			got, info, err := s.GetBlob(ctx, tc.key)
			if err != nil {
				t.Fatalf("GetBlob(%q): %v", tc.key, err)
			}
			if !bytes.Equal(got, []byte(tc.value)) {
				t.Fatalf("GetBlob(%q) = %q, want %q", tc.key, got, tc.value)
			}
			if info.Key != tc.key || info.Size != int64(len(tc.value)) || info.Modified.Before(before) || info.Modified.After(time.Now().Add(time.Minute)) {
				t.Fatalf("GetBlob(%q) info = %+v, want key, size %d and a modification time of about now", tc.key, info, len(tc.value))
			}
		}
		put(t, s, "binary", "replaced, longer than before")
		got, info, err := s.GetBlob(ctx, "binary")
		if err != nil || string(got) != "replaced, longer than before" || info.Size != int64(len(got)) {
			t.Fatalf("after overwrite: %q, %+v, %v", got, info, err)
		}
	})
	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		put(t, s, "a/b", "x")
		for _, key := range []string{"missing", "a", "a/b/c"} {
			_, _, err := s.GetBlob(ctx, key)
			wantCode(t, err, petstore.CodeNotFound)
			if got, want := petstore.ErrorMessage(err), blobs.NotFoundMessage; got != want {
				t.Fatalf("GetBlob(%q) message = %q, want %q, as every store says it", key, got, want)
			}
		}
	})
	t.Run("EmptyKeyOrLockName", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		wantCode(t, s.PutBlob(ctx, "", []byte("x")), petstore.CodeInvalidRequest)
		if got := keys(t, s, ""); got != "[]" {
			t.Fatalf("after PutBlob with an empty key the store lists %s, want []", got)
		}
		now := time.Now()
		for _, tc := range []struct{ name, owner string }{{"", "a"}, {"l", ""}} {
			ok, err := s.TryLock(ctx, tc.name, tc.owner, now, now.Add(time.Minute))
			if ok {
				t.Fatalf("TryLock(%q, %q) took the lock, want invalid_request", tc.name, tc.owner)
			}
			wantCode(t, err, petstore.CodeInvalidRequest)
		}
	})
	t.Run("ListByPrefixInOrder", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		if got := keys(t, s, ""); got != "[]" {
			t.Fatalf("empty store lists %s", got)
		}
		for _, k := range []string{"certs/b.com/b.key", "certs/a.com/a.crt", "certsx", "acme/account.json", "certs/a.com/a.key", "certs_%/x"} {
			put(t, s, k, k)
		}
		for _, tc := range []struct{ prefix, want string }{
			{"", "[acme/account.json certs/a.com/a.crt certs/a.com/a.key certs/b.com/b.key certs_%/x certsx]"},
			{"certs/", "[certs/a.com/a.crt certs/a.com/a.key certs/b.com/b.key]"},
			{"certs", "[certs/a.com/a.crt certs/a.com/a.key certs/b.com/b.key certs_%/x certsx]"},
			{"certs_%", "[certs_%/x]"}, // no SQL wildcards
			{"certs/a.com/a.crt", "[certs/a.com/a.crt]"},
			{"nothing", "[]"},
		} {
			t.Run(tc.prefix, func(t *testing.T) {
				if got := keys(t, s, tc.prefix); got != tc.want {
					t.Fatalf("ListBlobs(%q) = %s, want %s", tc.prefix, got, tc.want)
				}
			})
		}
		infos, err := s.ListBlobs(ctx, "acme/")
		if err != nil || len(infos) != 1 || infos[0].Size != int64(len("acme/account.json")) || infos[0].Modified.IsZero() {
			t.Fatalf("ListBlobs info = %+v, %v; want size and modification time", infos, err)
		}
	})
	t.Run("DeleteHierarchy", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		for _, k := range []string{"certs/a.com", "certs/a.com/a.crt", "certs/a.com/deep/x", "certs/a.comx/a.crt", "certs/b.com/b.crt"} {
			put(t, s, k, "v")
		}
		if err := s.DeleteBlob(ctx, "certs/a.com"); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(t, s, ""), "[certs/a.comx/a.crt certs/b.com/b.crt]"; got != want {
			t.Fatalf("after DeleteBlob(certs/a.com): %s, want %s", got, want)
		}
		for _, k := range []string{"certs/a.com", "never/existed"} {
			if err := s.DeleteBlob(ctx, k); err != nil {
				t.Fatalf("DeleteBlob(%q) of nothing: %v, want nil", k, err)
			}
		}
	})
	t.Run("LockExcludesOthers", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		now := time.Now()
		steps := []struct {
			what    string
			lock    func() (bool, error)
			wantGot bool
		}{
			{"A takes the free lock", func() (bool, error) { return s.TryLock(ctx, "issue_cert_a.com", "A", now, now.Add(time.Minute)) }, true},
			{"B is refused while A holds it", func() (bool, error) { return s.TryLock(ctx, "issue_cert_a.com", "B", now, now.Add(time.Minute)) }, false},
			{"another name is independent", func() (bool, error) { return s.TryLock(ctx, "issue_cert_b.com", "B", now, now.Add(time.Minute)) }, true},
			{"A refreshes its own lock", func() (bool, error) {
				return s.TryLock(ctx, "issue_cert_a.com", "A", now.Add(50*time.Second), now.Add(2*time.Minute))
			}, true},
			{"B is refused after A's old expiry, since A refreshed", func() (bool, error) {
				return s.TryLock(ctx, "issue_cert_a.com", "B", now.Add(90*time.Second), now.Add(3*time.Minute))
			}, false},
			{"B takes over once A's lock is stale", func() (bool, error) {
				return s.TryLock(ctx, "issue_cert_a.com", "B", now.Add(2*time.Minute), now.Add(3*time.Minute))
			}, true},
			{"A, back from the dead, is refused", func() (bool, error) {
				return s.TryLock(ctx, "issue_cert_a.com", "A", now.Add(2*time.Minute), now.Add(4*time.Minute))
			}, false},
		}
		for _, st := range steps {
			got, err := st.lock()
			if err != nil || got != st.wantGot {
				t.Fatalf("%s: TryLock = %v, %v; want %v", st.what, got, err, st.wantGot)
			}
		}
		// A no longer holds it: its Unlock must not free B's lock.
		if err := s.Unlock(ctx, "issue_cert_a.com", "A"); err != nil {
			t.Fatalf("Unlock by a non-holder: %v, want nil", err)
		}
		if ok, _ := s.TryLock(ctx, "issue_cert_a.com", "C", now.Add(2*time.Minute), now.Add(5*time.Minute)); ok {
			t.Fatal("C took the lock after a non-holder's Unlock")
		}
		if err := s.Unlock(ctx, "issue_cert_a.com", "B"); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.TryLock(ctx, "issue_cert_a.com", "C", now.Add(2*time.Minute), now.Add(5*time.Minute)); !ok || err != nil {
			t.Fatalf("C after B's Unlock: %v, %v; want the lock", ok, err)
		}
		if err := s.Unlock(ctx, "never_locked", "Z"); err != nil {
			t.Fatalf("Unlock of a lock never taken: %v", err)
		}
	})
	t.Run("LocksAreNotBlobs", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		now := time.Now()
		if ok, err := s.TryLock(ctx, "k", "A", now, now.Add(time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if got := keys(t, s, ""); got != "[]" {
			t.Fatalf("a lock shows up as blobs %s", got)
		}
		put(t, s, "k", "v")
		if err := s.DeleteBlob(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.TryLock(ctx, "k", "B", now, now.Add(time.Minute)); ok {
			t.Fatal("deleting blob k released lock k")
		}
	})
	t.Run("ConcurrentTryLockHasOneWinner", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		now := time.Now()
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				ok, err := s.TryLock(ctx, "contended", fmt.Sprint("owner", i), now, now.Add(time.Minute))
				if err != nil {
					t.Errorf("TryLock: %v", err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if got := wins.Load(); got != 1 {
			t.Fatalf("%d owners took one lock, want exactly 1", got)
		}
	})
	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := openBlobs(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.PutBlob(cctx, "k", []byte("v")); err == nil {
			t.Fatal("PutBlob with a canceled context succeeded")
		}
		if _, err := s.TryLock(cctx, "l", "A", time.Now(), time.Now().Add(time.Minute)); err == nil {
			t.Fatal("TryLock with a canceled context succeeded")
		}
		if got := keys(t, s, ""); got != "[]" {
			t.Fatalf("after a canceled put: %s, want nothing written", got)
		}
	})
	runBlobLimits(t, openBlobs)
}
