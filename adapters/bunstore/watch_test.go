package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	path := filepath.Join(t.TempDir(), "shared.db")
	dbA := migrated(t, openFileAt(t, path))
	a := bunstore.New(dbA)
	dbB := openFileAt(t, path)
	b := bunstore.New(dbB)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, secret, err := petstore.NewKeys(a).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cache := httpx.NewCache(nil)
	done := make(chan error, 1)
	go func() { done <- a.WatchChanges(ctx, 0, cache.Apply) }()
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(a), Auth: petstore.NewKeys(a), Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	first := createPet(t, a, "first")
	get := func(target string) string {
		w := do(t, h, http.MethodGet, target, secret, "")
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
		}
		return w.Body.String()
	}
	// seen waits until A's answer to target contains want, and says how
	// long that took.
	seen := func(target, want string) time.Duration {
		start := time.Now()
		for !strings.Contains(get(target), want) {
			if time.Since(start) > 2*time.Second {
				t.Fatalf("GET %s never showed %q", target, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Since(start)
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
		if d := seen("/v1/pets?limit=100", name); d > 100*time.Millisecond {
			t.Errorf("round %d: B's pet reached A's page after %v, want within 100 ms", i, d)
		}
		name = fmt.Sprintf("renamed %d", i)
		if _, err := dbB.ExecContext(ctx, "UPDATE pets SET name = ? WHERE id = ?", name, first.ID); err != nil {
			t.Fatal(err)
		}
		if d := seen(petPath, name); d > 100*time.Millisecond {
			t.Errorf("round %d: a rename by hand reached A's pet after %v, want within 100 ms", i, d)
		}
	}
	if !fromCache {
		t.Error("A never answered from what it keeps: the test proved nothing")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("WatchChanges returned %v after its context ended, want context.Canceled", err)
	}
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
