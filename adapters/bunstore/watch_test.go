package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/httpx"
)

// TestWatchedCacheServesAnotherProcesssCommitsWithin100ms: process A
// serves the API from encoded answers it keeps (httpx.Cache) and follows
// the file with WatchChanges; process B (a second handle on the file)
// creates pets, and a row is changed by hand. A's page and pet show each
// change within 100 ms, and meanwhile A's reads are answered from what it
// keeps (they would show the change at once otherwise).
func TestWatchedCacheServesAnotherProcesssCommitsWithin100ms(t *testing.T) {
	w := newWatched(t)
	a, dbB, h, secret, ctx := w.a, w.dbB, w.h, w.secret, w.ctx
	b := bunstore.New(dbB)
	first := createPet(t, a, "first")
	get := func(target string) string {
		w := do(t, h, http.MethodGet, target, secret, "")
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
		}
		return w.Body.String()
	}
	// within100ms fails t unless A's answer to target shows want for every
	// request made more than 100 ms from now: the bound is on when a
	// request is made, not on when a loaded machine answers it.
	within100ms := func(target, want, what string) {
		start := time.Now()
		for {
			made := time.Since(start)
			if strings.Contains(get(target), want) {
				return
			}
			if made > 100*time.Millisecond {
				t.Fatalf("%s: A answered %s without it to a request made %v later, want within 100 ms", what, target, made)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	petPath := fmt.Sprintf("/v1/pets/%d", first.ID)
	var fromCache bool
	for i := range 10 {
		get("/v1/pets?limit=100")
		get(petPath)
		name := fmt.Sprintf("from B %d", i)
		createPet(t, b, name)
		if !strings.Contains(get("/v1/pets?limit=100"), name) {
			fromCache = true
		}
		within100ms("/v1/pets?limit=100", name, fmt.Sprintf("round %d: B's pet %q", i, name))
		name = fmt.Sprintf("renamed %d", i)
		if _, err := dbB.ExecContext(ctx, "UPDATE pets SET name = ? WHERE id = ?", name, first.ID); err != nil {
			t.Fatal(err)
		}
		within100ms(petPath, name, fmt.Sprintf("round %d: a rename by hand to %q", i, name))
	}
	if !fromCache {
		t.Error("A never answered from what it keeps: the test proved nothing")
	}
	w.stop(t)
}

// TestWatchChangesSaysWhenItCannotTell: a look that fails (the database is
// closed) is KindLost, so a following cache keeps nothing.
func TestWatchChangesSaysWhenItCannotTell(t *testing.T) {
	db := openFile(t)
	s := bunstore.New(db)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kinds := make(chan string, 100)
	go func() {
		_ = s.WatchChanges(ctx, time.Millisecond, func(c changefeed.Change) { kinds <- c.Kind })
	}()
	if k := <-kinds; k != changefeed.KindLive {
		t.Fatalf("first change %q, want %q", k, changefeed.KindLive)
	}
	db.Close()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case k := <-kinds:
			if k == changefeed.KindLost {
				return
			}
		case <-timeout:
			t.Fatal("no KindLost within 5 s of the database closing")
		}
	}
}

// TestWatchChangesSkipsTheStoresOwnCreates: the store's own creates,
// which a cache above it drops for itself, are not reported, however many
// run at once; another process's create is, within 100 ms of its commit,
// and so is a write of this process that commits on another connection.
// Once the watch ends, creates still commit. A KindLost (a look that
// could not be made in time, as when the disk stalls) is an honest answer
// anywhere: a follower then keeps nothing, so it stands for any change.
// That the watch is not lost all the time is
// TestWatchedCacheServesAnotherProcesssCommitsWithin100ms's fromCache.
func TestWatchChangesSkipsTheStoresOwnCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := bunstore.New(migrated(t, openFileAt(t, path)))
	b := bunstore.New(openFileAt(t, path))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kinds := make(chan string, 1000)
	done := make(chan error, 1)
	go func() {
		done <- a.WatchChanges(ctx, 0, func(c changefeed.Change) { kinds <- c.Kind })
	}()
	if k := <-kinds; k != changefeed.KindLive {
		t.Fatalf("first change %q, want %q", k, changefeed.KindLive)
	}
	// changed waits up to d for a change that makes a follower drop what
	// it keeps (KindPets or KindLost) and says which, or "" for none.
	changed := func(d time.Duration) string {
		timeout := time.After(d)
		for {
			select {
			case k := <-kinds:
				if k != changefeed.KindLive {
					return k
				}
			case <-timeout:
				return ""
			}
		}
	}
	for round := range 5 {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() { createPet(t, a, fmt.Sprintf("a %d-%d", round, i)) })
		}
		wg.Wait()
		for k := changed(50 * time.Millisecond); k != ""; k = changed(50 * time.Millisecond) {
			if k == changefeed.KindPets {
				t.Fatalf("round %d: the store's own creates were reported", round)
			}
		}
		createPet(t, b, fmt.Sprintf("b %d", round))
		committed := time.Now()
		if k := changed(time.Second); k == "" {
			t.Fatalf("round %d: another process's create was not reported within a second", round)
		}
		if d := time.Since(committed); d > 100*time.Millisecond {
			t.Errorf("round %d: another process's create reported %v after its commit, want within 100 ms", round, d)
		}
	}
	if _, _, err := petstore.NewKeys(a).Create(ctx, "", petstore.PlanPro, petstore.Limits{}); err != nil {
		t.Fatal(err)
	}
	if k := changed(time.Second); k == "" {
		t.Fatal("a key created by this process was not reported within a second")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchChanges returned %v, want context.Canceled", err)
	}
	createPet(t, a, "after the watch")
}

// TestWatchSeesCommitsWhileAnOwnCreateWaits: another process B commits a
// pet and goes on writing, so a create of A's own waits for SQLite's
// write lock, which the watch's look waits behind. A's page still shows
// B's pet to every request made more than 100 ms after B's commit: a look
// that cannot be made in time empties A's cache instead.
func TestWatchSeesCommitsWhileAnOwnCreateWaits(t *testing.T) {
	w := newWatched(t)
	a, dbB, h, secret, ctx := w.a, w.dbB, w.h, w.secret, w.ctx
	page := func() string {
		w := do(t, h, http.MethodGet, "/v1/pets?limit=100", secret, "")
		if w.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	createPet(t, a, "first")
	page() // kept

	tx, err := dbB.BeginTx(ctx, nil) // B takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO pets (name, category_id, status) VALUES ('from B', 1, 'available')"); err != nil {
		t.Fatal(err)
	}
	created := make(chan struct{})
	go func() { defer close(created); createPet(t, a, "A's, waiting for the lock") }()
	time.Sleep(50 * time.Millisecond) // A's create waits in BEGIN IMMEDIATE
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	tx2, err := dbB.BeginTx(ctx, nil) // B writes on, for a second
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx2.ExecContext(ctx, "INSERT INTO pets (name, category_id, status) VALUES ('B again', 1, 'available')"); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(time.Second, func() { _ = tx2.Commit() })
	defer func() { release.Stop(); _ = tx2.Rollback() }()
	for {
		made := time.Since(committed) // when the request is made, not when it is answered
		if strings.Contains(page(), "from B") {
			break
		}
		if made > 100*time.Millisecond {
			t.Fatalf("A answered a page without B's committed pet to a request made %v after the commit, want within 100 ms", made)
		}
		time.Sleep(2 * time.Millisecond)
	}
	<-created
	w.stop(t)
}

// watched is process A of a SQLite file shared with another, serving the
// API from a cache that follows its WatchChanges, and dbB, the other
// process's handle on the file.
type watched struct {
	a      *bunstore.Store
	dbB    *bun.DB
	h      http.Handler
	secret string // a Pro key's
	ctx    context.Context
	cancel context.CancelFunc
	done   chan error // what WatchChanges returned
}

func newWatched(t *testing.T) *watched {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shared.db")
	w := &watched{a: bunstore.New(migrated(t, openFileAt(t, path))), dbB: openFileAt(t, path), done: make(chan error, 1)}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	t.Cleanup(w.cancel)
	var err error
	if _, w.secret, err = petstore.NewKeys(w.a).Create(w.ctx, "", petstore.PlanPro, petstore.Limits{}); err != nil {
		t.Fatal(err)
	}
	cache := httpx.NewCache(nil)
	go func() { w.done <- w.a.WatchChanges(w.ctx, 0, cache.Apply) }()
	if w.h, err = httpx.New(httpx.Config{Service: petstore.NewService(w.a), Auth: petstore.NewKeys(w.a), Cache: cache}); err != nil {
		t.Fatal(err)
	}
	return w
}

// stop ends the watch and checks that it returned for that reason.
func (w *watched) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchChanges = %v", err)
	}
}
