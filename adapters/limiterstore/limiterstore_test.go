package limiterstore_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	uredis "github.com/ulule/limiter/v3/drivers/store/redis"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/limiterstore"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// newMemory returns a ulule memory store without its clean-up goroutine,
// which a synctest bubble would wait for forever.
func newMemory() limiter.Store {
	return memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "t", CleanUpInterval: 0})
}

// TestOverMemory runs the whole suite: inside a synctest bubble, ulule's
// time.Now is the bubble's fake clock, so the suite travels in time.
func TestOverMemory(t *testing.T) {
	ratelimittest.RunHarness(t, ratelimittest.Harness{
		NewStore:  func(testing.TB) ratelimit.Store { return limiterstore.New(newMemory()) },
		WallClock: true,
		Bubble:    synctest.Test,
	})
}

// newUluleRedis returns a ulule Redis store whose keys all start with
// prefix, a testenv.RedisPrefix: ulule adds its own ":" after the prefix,
// so the one that ends the prefix is left to it.
func newUluleRedis(t testing.TB, c *redis.Client, prefix string) limiter.Store {
	t.Helper()
	st, err := uredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: strings.TrimSuffix(prefix, ":")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOverRedis runs the suite as far as ulule's Redis store allows: its
// expiries follow the server's clock, so the tests that travel in time
// (minute reset, day exhaustion, ban lifting and doubling, the honouring
// client) are skipped; exactness, refunds, plan changes and bans run.
func TestOverRedis(t *testing.T) {
	testenv.RedisURL(t)
	ratelimittest.RunHarness(t, ratelimittest.Harness{
		NewStore: func(t testing.TB) ratelimit.Store {
			c := testenv.RedisClient(t)
			return limiterstore.New(newUluleRedis(t, c, testenv.RedisPrefix(t, c, "ulule")))
		},
		WallClock: true,
	})
}

func TestTwoProcessesShareOneRedis(t *testing.T) {
	a, b := testenv.RedisClient(t), testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, a, "ulule")
	limiters := []*ratelimit.Limiter{
		ratelimit.New(limiterstore.New(newUluleRedis(t, a, prefix)), ratelimit.Config{StoreTimeout: 5 * time.Second}),
		ratelimit.New(limiterstore.New(newUluleRedis(t, b, prefix)), ratelimit.Config{StoreTimeout: 5 * time.Second}),
	}
	ratelimittest.CheckSharedQuota(t, limiters...)
}

// TestRoundTrips documents the cost of building on ulule: three round trips
// per admitted request (ban, minute, day), where redislimit needs one.
func TestRoundTrips(t *testing.T) {
	var count testenv.CommandCounter
	c := testenv.RedisClient(t)
	c.AddHook(&count)
	lim := ratelimit.New(limiterstore.New(newUluleRedis(t, c, testenv.RedisPrefix(t, c, "ulule"))), ratelimit.Config{})
	before := count.Count()
	for range 60 {
		if d, err := lim.Decide(context.Background(), "key:rt", ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if got, want := count.Count()-before, int64(3*60); got != want {
		t.Fatalf("60 admitted requests sent %d commands, want %d (3 each)", got, want)
	}
}

// TestOutageAdmissionsAreToldToTheStore: what a limiter admits on its own
// while the shared store is cut is owed to the store and told to it once
// it answers again, as over redislimit, so a key's window counts every
// request admitted in it: a process that admitted the rest of a minute
// during a cut admits nothing more in that minute after it.
func TestOutageAdmissionsAreToldToTheStore(t *testing.T) {
	o, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, o.Addr)
	o.Addr = proxy.Addr()
	o.ContextTimeoutEnabled, o.MaxRetries = true, -1
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	direct := testenv.RedisClient(t)
	lim := ratelimit.New(limiterstore.New(newUluleRedis(t, c, testenv.RedisPrefix(t, direct, "ulule"))), ratelimit.Config{})
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	decide := func(what string, allowed, degraded bool) {
		t.Helper()
		d, err := lim.Decide(ctx, "key:owed", limits)
		if err != nil || d.Allowed != allowed || d.Degraded != degraded {
			t.Fatalf("%s: %+v, %v; want allowed %v, degraded %v", what, d, err, allowed, degraded)
		}
	}
	for range 2 {
		decide("before the cut", true, false)
	}
	proxy.Cut()
	for range 3 {
		decide("during the cut, within the minute's quota", true, true)
	}
	decide("during the cut, past the minute's quota", false, true)
	proxy.Restore()
	decide("after the cut, the minute spent (2 before it, 3 during it)", false, false)
}

// TestSpentWindowIsRefusing: a limiter over this store knows from the
// store's answers when a window is spent, as over the others, so Refusing
// (which paces a refused client's key lookups) says so.
func TestSpentWindowIsRefusing(t *testing.T) {
	lim := ratelimit.New(limiterstore.New(memory.NewStore()), ratelimit.Config{})
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 2, PerDay: 100}
	for range 2 {
		if d, err := lim.Decide(ctx, "ip:192.0.2.9", limits); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if !lim.Refusing("ip:192.0.2.9") {
		t.Fatal("Refusing is false once the minute is spent")
	}
	if d, err := lim.Decide(ctx, "ip:192.0.2.9", limits); err != nil || d.Allowed {
		t.Fatalf("the third request of a 2/min minute: %+v, %v; want refused", d, err)
	}
	if !lim.Refusing("ip:192.0.2.9") {
		t.Fatal("Refusing is false after the store refused the minute's third request")
	}
}

// checkRefund: a refunded request gives its unit back, so a key that spent
// its minute is no longer refusing (Refusing, which paces a refused
// client's key lookups) and admits one more request, and only one. The
// first request is a second older than the others: ulule tells a window's
// end only to the second, so the store gives back only requests admitted
// at least a second after their window began (see Refund).
func checkRefund(t *testing.T, lim *ratelimit.Limiter) {
	t.Helper()
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	var last time.Time
	admitted := func() bool {
		t.Helper()
		d, err := lim.Decide(ctx, "key:refund", limits)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			last = d.At
		}
		return d.Allowed
	}
	admitted()
	time.Sleep(1100 * time.Millisecond)
	for i := range 4 {
		if !admitted() {
			t.Fatalf("request %d of a 5/min key refused", i+2)
		}
	}
	if admitted() {
		t.Fatal("a sixth request in the minute was admitted")
	}
	if err := lim.Refund(ctx, "key:refund", limits, last); err != nil {
		t.Fatal(err)
	}
	if lim.Refusing("key:refund") {
		t.Fatal("Refusing still true after a refund left one request in the minute")
	}
	if !admitted() {
		t.Fatal("after a refund the spent key still refuses")
	}
	if admitted() {
		t.Fatal("one refund admitted two more requests")
	}
}

func TestRefundOverMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := ratelimit.New(limiterstore.New(newMemory()), ratelimit.Config{})
		checkRefund(t, lim)

		// A request of the last minute refunded once the next has begun
		// gives nothing to the new minute, and one back to the day.
		ctx := context.Background()
		limits := petstore.Limits{PerMinute: 5, PerDay: 100}
		d, err := lim.Decide(ctx, "key:next", limits)
		if err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		time.Sleep(2 * time.Second)
		old, err := lim.Decide(ctx, "key:next", limits)
		if err != nil || !old.Allowed {
			t.Fatalf("%+v, %v", old, err)
		}
		time.Sleep(time.Minute)
		if d, err = lim.Decide(ctx, "key:next", limits); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		if err := lim.Refund(ctx, "key:next", limits, old.At); err != nil {
			t.Fatal(err)
		}
		d, err = lim.Decide(ctx, "key:next", limits)
		if err != nil || d.Windows[0].Remaining != 3 || d.Windows[1].Remaining != 97 {
			t.Fatalf("after refunding a request of the previous minute: %+v, %v; want 3 (the new minute keeps its count) and 97 (the day gives one back) left", d.Windows, err)
		}
	})
}

func TestRefundOverRedis(t *testing.T) {
	c := testenv.RedisClient(t)
	lim := ratelimit.New(limiterstore.New(newUluleRedis(t, c, testenv.RedisPrefix(t, c, "ulule"))), ratelimit.Config{StoreTimeout: 5 * time.Second})
	checkRefund(t, lim)
}

// TestRefundAtTheWindowsEndAdmitsNoMore: a refund whose Peek sees its
// window near its end, over a link slow enough that its Increment reaches
// Redis after the window ended, gives the next window nothing, not even
// for the round trip it takes to be undone: requests of the next window,
// made meanwhile over a fast link, are admitted up to the quota and no
// further. Timeline, from a whole second s (the window, 4 s long, runs from
// s+0.01 to s+4.01; the proxy adds 600 ms each way): the refund's Peek
// leaves at s+3, lands at s+3.6 and answers at s+4.2; an Increment sent
// then would land at s+4.8, in the next window, and be undone at s+6.0;
// the next window's requests are made at s+5.
func TestRefundAtTheWindowsEndAdmitsNoMore(t *testing.T) {
	o, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, o.Addr)
	o.Addr = proxy.Addr()
	slow := redis.NewClient(o) // go-redis's default timeouts: 3 s
	t.Cleanup(func() { _ = slow.Close() })
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "ulule")
	fast, refunder := limiterstore.New(newUluleRedis(t, direct, prefix)), limiterstore.New(newUluleRedis(t, slow, prefix))
	ctx := context.Background()
	rates := []ratelimit.Rate{{Name: "short", Quota: 2, Period: 4 * time.Second}}
	sleepUntil := func(at time.Time) { time.Sleep(time.Until(at)) }
	take := func() ratelimit.Result {
		t.Helper()
		res, err := fast.Take(ctx, ratelimit.Request{Subject: "key:edge", Rates: rates, Now: time.Now(), Ban: ratelimit.BanPolicy{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The window starts just after a whole second s, as ulule's ends are
	// whole seconds: a wake-up that came late waits for the next one.
	s := time.Now().Truncate(time.Second)
	for {
		s = s.Add(time.Second)
		if sleepUntil(s.Add(10 * time.Millisecond)); time.Since(s) < 100*time.Millisecond {
			break
		}
	}
	if !take().Allowed {
		t.Fatal("the window's first request was refused")
	}
	sleepUntil(s.Add(1100 * time.Millisecond))
	refunded := time.Now()
	if !take().Allowed {
		t.Fatal("the window's second request was refused")
	}
	if take().Allowed {
		t.Fatal("a third request in a window of 2 was admitted")
	}
	sleepUntil(s.Add(3 * time.Second))
	proxy.SetLatency(600 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		done <- refunder.Refund(ctx, ratelimit.Request{Subject: "key:edge", Rates: rates, Now: refunded})
	}()
	sleepUntil(s.Add(5 * time.Second))
	admitted := 0
	for range 3 {
		if take().Allowed {
			admitted++
		}
	}
	if since := time.Since(s); since > 5900*time.Millisecond {
		t.Fatalf("the next window's requests ended at s+%v, after the refund's Increment would be undone", since)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := admitted, 2; got != want {
		t.Fatalf("the next window admitted %d of 3 requests while a refund of the last one was on its way, want %d (its quota)", got, want)
	}
}
