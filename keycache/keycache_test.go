package keycache_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/keycache"
)

// clock is a manual clock for the cache's lifetimes.
func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) }

// openStore returns a migrated bunstore on a SQLite file of its own, and
// the database, which a test may close to make the store unavailable.
func openStore(tb testing.TB) *bunstore.Store {
	tb.Helper()
	db, err := bunstore.OpenSQLite(filepath.Join(tb.TempDir(), "keys.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	return bunstore.New(db)
}

func newKey(tb testing.TB, keys *petstore.Keys, plan petstore.Plan) (petstore.APIKey, string) {
	tb.Helper()
	key, secret, err := keys.Create(context.Background(), "", plan, petstore.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	return key, secret
}

func wantKey(t *testing.T, a petstore.Authenticator, secret string, want petstore.APIKey) {
	t.Helper()
	got, err := a.Authenticate(context.Background(), secret)
	if err != nil || got != want {
		t.Fatalf("Authenticate = %+v, %v; want %+v", got, err, want)
	}
}

func wantCode(t *testing.T, a petstore.Authenticator, secret, code string) {
	t.Helper()
	got, err := a.Authenticate(context.Background(), secret)
	if petstore.ErrorCode(err) != code {
		t.Fatalf("Authenticate = %+v, %v; want %s", got, err, code)
	}
}

func wantStats(t *testing.T, c *keycache.Cache, want keycache.Stats) {
	t.Helper()
	if got := c.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestOnlySuccessesAreKept(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanPro)
	c := keycache.New(keys, keycache.Config{Now: newClock().Now})

	for _, bad := range []string{"psk_unknown", "psk_other", "", strings.Repeat("x", 513)} {
		for range 3 {
			wantCode(t, c, bad, petstore.CodeUnauthorized)
		}
	}
	if s := c.Stats(); s.Len != 0 || s.Hits != 0 {
		t.Fatalf("after unknown tokens: %+v, want nothing kept or hit", s)
	}
	before := c.Stats().Misses
	for range 5 {
		wantKey(t, c, secret, key)
	}
	// The two unknown tokens were asked once each; their repeats came
	// from the negative cache.
	wantStats(t, c, keycache.Stats{Hits: 4, Misses: before + 1, Len: 1, Negative: 4})
}

// countingAuth counts the lookups that reach the key store.
type countingAuth struct {
	next petstore.Authenticator
	n    atomic.Int64
}

func (a *countingAuth) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	a.n.Add(1)
	return a.next.Authenticate(ctx, token)
}

// TestUnknownTokensCostOneLookupAMinute: a flood of wrong keys costs one
// store lookup per distinct key per minute, and a key change forgets them.
func TestUnknownTokensCostOneLookupAMinute(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	lookups := &countingAuth{next: keys}
	clk := newClock()
	c := keycache.New(lookups, keycache.Config{Now: clk.Now})
	c.Apply(changefeed.Change{Kind: changefeed.KindLive}) // a live feed tells when a key becomes known
	for range 1000 {
		for k := range 10 {
			wantCode(t, c, fmt.Sprintf("psk_wrong%d", k), petstore.CodeUnauthorized)
		}
	}
	if got := lookups.n.Load(); got != 10 {
		t.Fatalf("10,000 tries of 10 wrong keys cost %d lookups, want 10", got)
	}
	clk.Advance(keycache.DefaultNegativeTTL)
	wantCode(t, c, "psk_wrong0", petstore.CodeUnauthorized)
	if got := lookups.n.Load(); got != 11 {
		t.Fatalf("a minute later: %d lookups, want 11", got)
	}
	c.Invalidate("any")
	wantCode(t, c, "psk_wrong1", petstore.CodeUnauthorized)
	if got := lookups.n.Load(); got != 12 {
		t.Fatalf("after a key change: %d lookups, want 12 (the unknown tokens forgotten)", got)
	}
}

// TestNegativeSizeBoundsTheUnknownTokensKept: past NegativeSize unknown
// tokens, the oldest are forgotten, and cost a lookup again.
func TestNegativeSizeBoundsTheUnknownTokensKept(t *testing.T) {
	lookups := &countingAuth{next: petstore.NewKeys(openStore(t))}
	c := keycache.New(lookups, keycache.Config{Now: newClock().Now, NegativeSize: 4})
	c.Apply(changefeed.Change{Kind: changefeed.KindLive})
	ask := func(from, to int) int64 {
		t.Helper()
		n := lookups.n.Load()
		for i := from; i <= to; i++ {
			wantCode(t, c, fmt.Sprintf("psk_wrong%d", i), petstore.CodeUnauthorized)
		}
		return lookups.n.Load() - n
	}
	if got := ask(0, 5); got != 6 {
		t.Fatalf("6 wrong keys cost %d lookups, want 6", got)
	}
	if got := ask(2, 5); got != 0 {
		t.Fatalf("the 4 newest again cost %d lookups, want none", got)
	}
	if got := ask(0, 0); got != 1 {
		t.Fatalf("the oldest again cost %d lookups, want 1", got)
	}
}

// TestUnknownTokenBecomesKnownWithinTTLWithoutAFeed: with no feed to tell
// of a key created or re-enabled elsewhere, an unknown token is
// remembered for TTL at most, the cache's staleness bound.
func TestUnknownTokenBecomesKnownWithinTTLWithoutAFeed(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanPro)
	other := petstore.NewKeys(store) // another process's, which this cache never hears from
	ctx := context.Background()
	if err := other.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	c := keycache.New(keys, keycache.Config{Now: clk.Now})
	wantCode(t, c, secret, petstore.CodeUnauthorized)
	if _, err := other.Unrevoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(keycache.DefaultTTL)
	if _, err := c.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a key re-enabled elsewhere, %v later: %v", keycache.DefaultTTL, err)
	}
}

// TestRefusedClientLookupsArePaced: a client the rate limiter refuses
// costs at most one lookup a second, whatever it sends; its cached valid
// key is still served without one, and so is an uncached one once a
// second.
func TestRefusedClientLookupsArePaced(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanPro)
	lookups := &countingAuth{next: keys}
	clk := newClock()
	bad := netip.MustParseAddr("2001:db8:1:2::7")
	c := keycache.New(lookups, keycache.Config{Now: clk.Now, Refused: func(a netip.Addr) bool { return a.Is6() }})
	ctx := context.Background()
	for i := range 5000 {
		// Wrong keys, all different, and a valid key not yet cached, from
		// one /64.
		addr := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)})
		tok := fmt.Sprintf("psk_junk%d", i)
		if i == 4999 {
			tok = secret
		}
		if _, err := c.AuthenticateClient(ctx, tok, addr); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
			t.Fatalf("request %d: %v, want unauthorized", i, err)
		}
	}
	if got := lookups.n.Load(); got != 1 {
		t.Fatalf("5,000 requests of a refused /64 in a second cost %d lookups, want 1", got)
	}
	clk.Advance(keycache.RefusedLookupEvery)
	if got, err := c.AuthenticateClient(ctx, secret, bad); err != nil || got != key {
		t.Fatalf("a valid key from a refused client a second later: %+v, %v; want served", got, err)
	}
	n := lookups.n.Load()
	for range 100 {
		if got, err := c.AuthenticateClient(ctx, secret, bad); err != nil || got != key {
			t.Fatalf("cached key from a refused client: %+v, %v; want served", got, err)
		}
	}
	if got := lookups.n.Load() - n; got != 0 {
		t.Fatalf("a cached key from a refused client cost %d lookups, want none", got)
	}
	// A client that is not refused is not paced.
	for i := range 5 {
		wantCode(t, c, fmt.Sprintf("psk_other%d", i), petstore.CodeUnauthorized)
	}
	if got := lookups.n.Load() - n; got != 5 {
		t.Fatalf("5 wrong keys from a client that is not refused cost %d lookups, want 5", got)
	}
}

// TestTTL: a key changed in the store behind the cache's back (as by
// another process, with no feed) is served for at most TTL.
func TestTTL(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	clk := newClock()
	c := keycache.New(keys, keycache.Config{Now: clk.Now, TTL: time.Second})
	wantKey(t, c, secret, key)
	if err := store.DeleteKey(context.Background(), key.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second - time.Nanosecond)
	wantKey(t, c, secret, key) // stale, within the bound
	clk.Advance(time.Nanosecond)
	wantCode(t, c, secret, petstore.CodeUnauthorized)
	if s := c.Stats(); s.Len != 0 {
		t.Fatalf("a revoked key is still kept: %+v", s)
	}
}

// TestFeedStates: while a feed is live, keys are kept for LiveTTL; every
// change of the feed's state forgets all, and a lost feed brings TTL back.
func TestFeedStates(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	clk := newClock()
	c := keycache.New(keys, keycache.Config{Now: clk.Now, TTL: time.Second, LiveTTL: time.Minute})

	c.Apply(changefeed.Change{Kind: changefeed.KindLive})
	wantKey(t, c, secret, key)
	clk.Advance(59 * time.Second)
	wantKey(t, c, secret, key)
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 1, Len: 1})

	c.Apply(changefeed.Change{Kind: changefeed.KindLost})
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 1, Len: 0})
	wantKey(t, c, secret, key)
	clk.Advance(time.Second)
	wantKey(t, c, secret, key)
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 3, Len: 1})

	c.Apply(changefeed.Change{Kind: changefeed.KindLive})
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 3, Len: 0})
	c.Apply(changefeed.Change{Kind: changefeed.KindDomain, ID: key.ID}) // not about keys
	wantKey(t, c, secret, key)
	c.Apply(changefeed.Change{Kind: changefeed.KindDomain, ID: key.ID})
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 4, Len: 1})
	c.Apply(changefeed.Change{Kind: changefeed.KindKey, ID: key.ID})
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 4, Len: 0})
}

// TestTwoProcesses: two caches on one feed, as two processes would be.
// A revoke or a plan change made through one takes effect in it before
// the call returns, and in the other as soon as the feed delivers (the
// Local feed delivers before Publish returns).
func TestTwoProcesses(t *testing.T) {
	store := openStore(t)
	feed := &changefeed.Local{}
	clk := newClock()
	var caches [2]*keycache.Cache
	var keys [2]*petstore.Keys
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range caches {
		keys[i], caches[i] = keycache.NewKeys(store, feed, keycache.Config{Now: clk.Now}, func(err error) {
			t.Errorf("publish: %v", err)
		})
		live := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = caches[i].Follow(ctx, changefeed.Feed(liveSignal{feed, live}))
		}()
		<-live
	}
	key, secret := newKey(t, keys[0], petstore.PlanFree)
	for _, c := range caches {
		wantKey(t, c, secret, key)
	}

	replanned, err := keys[0].SetPlan(ctx, key.ID, petstore.PlanBusiness, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		wantKey(t, c, secret, replanned)
	}
	if err := keys[1].Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		wantCode(t, c, secret, petstore.CodeUnauthorized)
	}
}

// liveSignal is a feed that closes live when its subscription is live.
type liveSignal struct {
	*changefeed.Local
	live chan struct{}
}

func (l liveSignal) Subscribe(ctx context.Context, fn func(changefeed.Change)) error {
	return l.Local.Subscribe(ctx, func(c changefeed.Change) {
		fn(c)
		if c.Kind == changefeed.KindLive {
			close(l.live)
		}
	})
}

func TestLeastRecentlyUsedGoes(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	c := keycache.New(keys, keycache.Config{Size: 2, Now: newClock().Now})
	k1, s1 := newKey(t, keys, petstore.PlanFree)
	k2, s2 := newKey(t, keys, petstore.PlanFree)
	k3, s3 := newKey(t, keys, petstore.PlanFree)
	wantKey(t, c, s1, k1)
	wantKey(t, c, s2, k2)
	wantKey(t, c, s1, k1) // k2 is now the least recently used
	wantKey(t, c, s3, k3) // and goes
	wantStats(t, c, keycache.Stats{Hits: 1, Misses: 3, Len: 2})
	wantKey(t, c, s1, k1)
	wantKey(t, c, s3, k3)
	wantStats(t, c, keycache.Stats{Hits: 3, Misses: 3, Len: 2})
	wantKey(t, c, s2, k2)
	wantStats(t, c, keycache.Stats{Hits: 3, Misses: 4, Len: 2})
}

// TestStoreDown: while the store is unavailable, kept keys are served
// within their lifetime, and every other lookup fails as the store does,
// with nothing kept.
func TestStoreDown(t *testing.T) {
	db, err := bunstore.OpenSQLite(filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bunstore.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	keys := petstore.NewKeys(bunstore.New(db))
	key, secret := newKey(t, keys, petstore.PlanPro)
	_, other := newKey(t, keys, petstore.PlanPro)
	clk := newClock()
	c := keycache.New(keys, keycache.Config{Now: clk.Now})
	wantKey(t, c, secret, key)
	_ = db.Close()

	wantKey(t, c, secret, key)
	for range 2 {
		wantCode(t, c, other, petstore.CodeUnavailable)
	}
	clk.Advance(keycache.DefaultTTL)
	wantCode(t, c, secret, petstore.CodeUnavailable)
	if s := c.Stats(); s.Len != 0 {
		t.Fatalf("kept %d keys while the store was down", s.Len)
	}
}

// pausing is the real key manager with a pause in the middle of a
// lookup, where a revoke can slip in.
type pausing struct {
	keys    *petstore.Keys
	looked  chan struct{}
	proceed chan struct{}
}

func (p *pausing) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	k, err := p.keys.Authenticate(ctx, token)
	p.looked <- struct{}{}
	<-p.proceed
	return k, err
}

// TestRevokeDuringLookup: a lookup that read a key before it was revoked
// answers with what it read, but the cache does not keep it.
func TestRevokeDuringLookup(t *testing.T) {
	store := openStore(t)
	keys := petstore.NewKeys(store)
	key, secret := newKey(t, keys, petstore.PlanFree)
	p := &pausing{keys: keys, looked: make(chan struct{}), proceed: make(chan struct{})}
	c := keycache.New(p, keycache.Config{Now: newClock().Now})

	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.Authenticate(context.Background(), secret); err != nil {
			t.Errorf("lookup begun before the revoke: %v", err)
		}
	}()
	<-p.looked
	if err := store.DeleteKey(context.Background(), key.ID); err != nil {
		t.Fatal(err)
	}
	c.Invalidate(key.ID)
	close(p.proceed)
	<-done
	go func() { <-p.looked }()
	wantCode(t, c, secret, petstore.CodeUnauthorized)
}
