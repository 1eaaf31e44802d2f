package keycache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/keycache"
)

// TestConcurrentLookupsShareOne: on a PostgreSQL slowed to 100 ms a round
// trip, 50 requests at once with one key that is not cached (an expired
// entry of a busy key, or a flood of one wrong key) cost one store lookup,
// as "one store lookup per TTL per process" says, not one each.
func TestConcurrentLookupsShareOne(t *testing.T) {
	proxy, dsn := faultproxy.StartFor(t, testenv.PostgresSchema(t))
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	keys := petstore.NewKeys(bunstore.New(db))
	key, secret := newKey(t, keys, petstore.PlanPro)
	proxy.SetLatency(100 * time.Millisecond)

	for _, tc := range []struct {
		name, token string
		want        petstore.APIKey
		code        string
	}{
		{"KnownKey", secret, key, ""},
		{"UnknownToken", "psk_wrong_and_flooded", petstore.APIKey{}, petstore.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookups := &countingAuth{next: keys}
			c := keycache.New(lookups, keycache.Config{Now: newClock().Now})
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got, err := c.Authenticate(context.Background(), tc.token)
					if got != tc.want || petstore.ErrorCode(err) != tc.code {
						t.Errorf("Authenticate = %+v, %v; want %+v, %q", got, err, tc.want, tc.code)
					}
				}()
			}
			close(start)
			wg.Wait()
			if got := lookups.n.Load(); got != 1 {
				t.Fatalf("50 concurrent requests with one token cost %d store lookups, want 1", got)
			}
		})
	}
}

// gated is the real key manager whose first lookup, once it has read the
// store, waits for proceed or for its request to end; later lookups pass.
type gated struct {
	keys    *petstore.Keys
	once    sync.Once
	looked  chan struct{}
	proceed chan struct{}
}

func newGated(keys *petstore.Keys) *gated {
	return &gated{keys: keys, looked: make(chan struct{}), proceed: make(chan struct{})}
}

func (g *gated) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	k, err := g.keys.Authenticate(ctx, token)
	first := false
	g.once.Do(func() { first = true })
	if !first {
		return k, err
	}
	close(g.looked)
	select {
	case <-g.proceed:
		return k, err
	case <-ctx.Done():
		return petstore.APIKey{}, ctx.Err()
	}
}

// TestLookupBegunBeforeARevokeIsNotShared: a request made after a revoke
// returned does not wait for, nor take, the answer of a lookup that read
// the key before it.
func TestLookupBegunBeforeARevokeIsNotShared(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	g := newGated(keys)
	c := keycache.New(g, keycache.Config{Now: newClock().Now})

	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.Authenticate(context.Background(), secret); err != nil {
			t.Errorf("lookup begun before the revoke: %v", err)
		}
	}()
	<-g.looked
	if err := store.DeleteKey(context.Background(), key.ID); err != nil {
		t.Fatal(err)
	}
	c.Invalidate(key.ID)
	// Joined to the first lookup, this request would wait for it until
	// its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := c.Authenticate(ctx, secret); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Errorf("request made after the revoke: %+v, %v; want unauthorized", got, err)
	}
	close(g.proceed)
	<-done
}

// TestSharedLookupOutlivesItsRequest: when the request whose lookup others
// wait for ends before the store answers, they are not told its error:
// they ask the store themselves.
func TestSharedLookupOutlivesItsRequest(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	g := newGated(keys)
	c := keycache.New(g, keycache.Config{Now: newClock().Now})

	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Authenticate(first, secret)
		firstErr <- err
	}()
	<-g.looked
	shared := make(chan error, 1)
	go func() {
		got, err := c.Authenticate(context.Background(), secret)
		if err == nil && got != key {
			err = fmt.Errorf("got %+v, want %+v", got, key)
		}
		shared <- err
	}()
	for c.Stats().Shared == 0 { // the second request waits for the first's lookup
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the ended request: %v, want %v", err, context.Canceled)
	}
	if err := <-shared; err != nil {
		t.Errorf("the request that waited for it: %v, want its key", err)
	}
}

// TestStuckLookupIsSharedForTTLAtMost: a lookup that does not come back
// (its request has no deadline, its connection is black-holed) is shared
// for TTL at most: a request made later asks the store itself, so a key
// costs at most one lookup per TTL however its lookups fare.
func TestStuckLookupIsSharedForTTLAtMost(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	g := newGated(keys)
	clk := newClock()
	c := keycache.New(g, keycache.Config{Now: clk.Now})

	stuck := make(chan struct{})
	go func() {
		defer close(stuck)
		_, _ = c.Authenticate(context.Background(), secret)
	}()
	<-g.looked
	clk.Advance(keycache.DefaultTTL)
	// Joined to the stuck lookup, this request would wait for it until
	// its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := c.Authenticate(ctx, secret); err != nil || got != key {
		t.Errorf("a request %v after a lookup that is stuck: %+v, %v; want %+v", keycache.DefaultTTL, got, err, key)
	}
	close(g.proceed)
	<-stuck
}

// TestSharedAnswerIsNoOlderThanTheBound: a request that joins a lookup
// near the end of its 1 s window, after another process revoked the key,
// is not handed that lookup's answer, read before the revoke, once it is
// more than the 1 s bound old (docs/keys.md, "Staleness bound"): the store
// answered slowly, and the request asks again.
func TestSharedAnswerIsNoOlderThanTheBound(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	g := newGated(keys)
	clk := newClock()
	c := keycache.New(g, keycache.Config{Now: clk.Now})

	first := make(chan error, 1)
	go func() {
		_, err := c.Authenticate(context.Background(), secret)
		first <- err
	}()
	<-g.looked // the lookup read the key, and its answer is slow to come
	// Another process, which this one hears nothing from, revokes it.
	if err := petstore.NewKeys(store).Revoke(context.Background(), key.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(keycache.DefaultTTL - 100*time.Millisecond)
	joined := make(chan error, 1)
	go func() {
		got, err := c.Authenticate(context.Background(), secret)
		if err == nil {
			err = fmt.Errorf("accepted as %+v", got)
		}
		joined <- err
	}()
	for c.Stats().Shared == 0 { // the request waits for the slow lookup
		time.Sleep(time.Millisecond)
	}
	clk.Advance(200 * time.Millisecond) // the answer comes 1.1 s after the revoke
	close(g.proceed)
	if err := <-joined; petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Errorf("a request answered %v after the revoke, past the %v bound: %v; want unauthorized",
			keycache.DefaultTTL+100*time.Millisecond, keycache.DefaultTTL, err)
	}
	if err := <-first; err != nil {
		t.Logf("the request whose lookup read the key before the revoke: %v", err)
	}
}
