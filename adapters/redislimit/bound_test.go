package redislimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// These tests hold the over-admission bounds docs/rate-limits.md
// publishes. Each "process" is a Limiter with its own Redis client
// (its own connection pool) behind its own fault proxy, sharing nothing
// with the others but the Redis server, as separate processes would.

// procs is the number of processes of the bound tests.
const procs = 3

// cluster is procs limiters over one Redis prefix.
type cluster struct {
	prefix  string
	lims    []*ratelimit.Limiter
	proxies []*faultproxy.Proxy
}

func newCluster(t *testing.T, cfg ratelimit.Config) *cluster {
	t.Helper()
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	c := &cluster{prefix: prefix}
	for range procs {
		p := newProxy(t)
		lim := ratelimit.New(redislimit.New(proxied(t, p), prefix), cfg)
		t.Cleanup(func() { _ = lim.Close(context.Background()) })
		// Warm the pool and the script cache, as a running server has.
		if _, err := lim.Decide(context.Background(), "key:warm", ratelimittest.Free); err != nil {
			t.Fatal(err)
		}
		c.lims = append(c.lims, lim)
		c.proxies = append(c.proxies, p)
	}
	return c
}

// tally counts the outcomes of decisions.
type tally struct{ admitted, refused, unavailable, local atomic.Int64 }

func (ty *tally) add(t *testing.T, d ratelimit.Decision, err error) {
	switch {
	case petstore.ErrorCode(err) == petstore.CodeUnavailable:
		ty.unavailable.Add(1)
	case err != nil:
		t.Error(err)
	case d.Allowed:
		ty.admitted.Add(1)
	default:
		ty.refused.Add(1)
	}
	if d.Degraded {
		ty.local.Add(1)
	}
}

// burst sends n concurrent requests of subject to every process at once.
func (c *cluster) burst(t *testing.T, subject string, n int, ty *tally) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, lim := range c.lims {
		for range n {
			wg.Go(func() {
				<-start
				d, err := lim.Decide(context.Background(), subject, ratelimittest.Free)
				ty.add(t, d, err)
			})
		}
	}
	close(start)
	wg.Wait()
}

func TestBoundQuiet(t *testing.T) {
	c := newCluster(t, ratelimit.Config{})
	var ty tally
	c.burst(t, "key:fresh", 200, &ty)
	t.Logf("quiet: 3 × 200 concurrent requests of a fresh Free key: %d admitted, %d refused, %d decided locally",
		ty.admitted.Load(), ty.refused.Load(), ty.local.Load())
	if got := ty.admitted.Load(); got > 60 || got < 55 {
		t.Fatalf("admitted %d, want at most the quota, 60 (and no share lost: at least 55)", got)
	}
}

func TestBoundBusyCPU(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows every call about tenfold: this load test's figures need a normal build")
	}
	for _, failClosed := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail open", true: "fail closed"}[failClosed], func(t *testing.T) {
			c := newCluster(t, ratelimit.Config{FailClosed: failClosed})
			busyCPUs(t)
			var ty tally
			c.burst(t, "key:fresh", 200, &ty)
			t.Logf("every core busy (%d): 3 × 200 concurrent requests: %d admitted, %d refused, %d unavailable, %d decided locally",
				runtime.NumCPU(), ty.admitted.Load(), ty.refused.Load(), ty.unavailable.Load(), ty.local.Load())
			if got := ty.admitted.Load(); got > 63 {
				t.Fatalf("admitted %d, want at most 63", got)
			}
			if got := ty.unavailable.Load(); got != 0 {
				t.Fatalf("%d refused as unavailable by a working Redis", got)
			}
		})
	}
}

func TestBoundSlowRedis(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail open", true: "fail closed"}[failClosed], func(t *testing.T) {
			c := newCluster(t, ratelimit.Config{FailClosed: failClosed})
			for _, p := range c.proxies {
				p.SetLatency(100 * time.Millisecond)
			}
			var ty tally
			c.burst(t, "key:fresh", 200, &ty)
			t.Logf("Redis slowed by 100 ms each way: 3 × 200 concurrent requests: %d admitted, %d refused, %d unavailable, %d decided locally",
				ty.admitted.Load(), ty.refused.Load(), ty.unavailable.Load(), ty.local.Load())
			if got, bound := ty.admitted.Load(), int64(procs*60); got > bound {
				t.Fatalf("admitted %d, want at most N × quota = %d", got, bound)
			}
			if got := ty.unavailable.Load(); got != 0 {
				t.Fatalf("%d refused as unavailable by a slow Redis, want none: slow is decided locally", got)
			}
			for i, lim := range c.lims {
				if st := lim.Status(); !st.Ready() || st.Unreachable {
					t.Fatalf("process %d with a slow Redis: %+v, want ready", i, st)
				}
			}
		})
	}
}

// TestBoundSlowRedisBeyondTimeout is issue 28's fail-closed case: a Redis
// that answers, but after more than the store timeout, is decided locally
// in both modes; no 503, and the limiter stays ready.
func TestBoundSlowRedisBeyondTimeout(t *testing.T) {
	c := newCluster(t, ratelimit.Config{FailClosed: true, StoreTimeout: 200 * time.Millisecond})
	for _, p := range c.proxies {
		p.SetLatency(150 * time.Millisecond)
	}
	var ty tally
	for range 3 {
		c.burst(t, "key:fresh", 50, &ty)
	}
	t.Logf("Redis 300 ms a round trip, timeout 200 ms: %d admitted, %d refused, %d unavailable, %d decided locally",
		ty.admitted.Load(), ty.refused.Load(), ty.unavailable.Load(), ty.local.Load())
	if ty.unavailable.Load() != 0 || ty.local.Load() == 0 {
		t.Fatalf("%d unavailable, %d decided locally; want none unavailable and the rest decided locally", ty.unavailable.Load(), ty.local.Load())
	}
	if got, bound := ty.admitted.Load(), int64(procs*60); got > bound {
		t.Fatalf("admitted %d, want at most N × quota = %d", got, bound)
	}
	for i, lim := range c.lims {
		if st := lim.Status(); !st.Ready() || st.Unreachable {
			t.Fatalf("process %d with a slow Redis: %+v, want ready", i, st)
		}
	}
}

func TestBoundRedisCut(t *testing.T) { boundThroughFault(t, "cut", (*faultproxy.Proxy).Cut) }

// TestBoundRedisPaused is TestBoundRedisCut with the links paused (a
// black hole) instead: the calls in flight hang until their timeout.
func TestBoundRedisPaused(t *testing.T) {
	boundThroughFault(t, "paused", (*faultproxy.Proxy).Pause)
}

// boundThroughFault puts fault on every process's link to Redis for 2 s
// under a burst, then bursts on: the processes together admit at most
// N × quota over the fault and the minute after it.
func boundThroughFault(t *testing.T, name string, fault func(*faultproxy.Proxy)) {
	c := newCluster(t, ratelimit.Config{BreakerCooldown: 100 * time.Millisecond})
	var ty tally
	for _, p := range c.proxies {
		fault(p)
	}
	began := time.Now()
	c.burst(t, "key:fresh", 200, &ty)
	during := ty.admitted.Load()
	time.Sleep(time.Until(began.Add(2 * time.Second)))
	for _, p := range c.proxies {
		p.Restore()
	}
	// Each process decides alone until its breaker's probe reaches Redis.
	for i, lim := range c.lims {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			d, err := lim.Decide(context.Background(), "key:probe", ratelimittest.Free)
			if err == nil && !d.Degraded {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d: Redis back for 30 s, decisions still local: %+v, %v", i, d, err)
			}
		}
	}
	// The minute after: what each process admitted alone is owed to Redis.
	for range 3 {
		c.burst(t, "key:fresh", 200, &ty)
	}
	t.Logf("Redis %s for 2 s: %d admitted during the fault, %d in all with 3 × 600 more after it, %d decided locally",
		name, during, ty.admitted.Load(), ty.local.Load())
	if got, bound := ty.admitted.Load(), int64(procs*60); got > bound {
		t.Fatalf("admitted %d over the fault and after it, want at most N × quota = %d", got, bound)
	}
}

// TestBanReachesEveryProcess bans a key in one process and checks that
// the others, which never decided it, refuse it within 1 s: with Redis up,
// and while Redis is paused, cut or slower than the store timeout from
// once the second is over.
func TestBanReachesEveryProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*faultproxy.Proxy) // nil: Redis stays up
	}{
		{"Redis up", nil},
		{"Redis down", (*faultproxy.Proxy).Pause},
		{"Redis cut", (*faultproxy.Proxy).Cut},
		{"Redis slow", func(p *faultproxy.Proxy) { p.SetLatency(600 * time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, ratelimit.Config{})
			ctx := context.Background()
			var banned time.Time
			for i := 0; ; i++ {
				d, err := c.lims[0].Decide(ctx, "key:abuser", ratelimittest.Free)
				if err != nil {
					t.Fatal(err)
				}
				if d.Code == petstore.CodeAPIKeyBanned {
					banned = time.Now()
					break
				}
				if i == 60 {
					time.Sleep(time.Second) // past the strike grace
				}
				if i > 200 {
					t.Fatal("no ban after 200 requests")
				}
			}
			deadline := banned.Add(time.Second)
			if tc.fault != nil {
				time.Sleep(time.Until(deadline))
				for _, p := range c.proxies {
					tc.fault(p)
				}
				deadline = time.Now().Add(time.Second)
			}
			for i, lim := range c.lims[1:] {
				for {
					d, err := lim.Decide(ctx, "key:abuser", ratelimittest.Free)
					if err == nil && d.Code == petstore.CodeAPIKeyBanned {
						t.Logf("process %d refuses the ban %v after it started", i+2, time.Since(banned).Round(time.Millisecond))
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("process %d: %+v, %v more than 1 s after the ban, want api_key_banned", i+2, d, err)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// TestClockAheadBoundsWindowsAndBans, with CallerClock: a process whose wall clock is an
// hour ahead writes window and ban ends an hour late; another process
// still holds them for their length at most, not an hour more.
func TestClockAheadBoundsWindowsAndBans(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "rl")
	ahead := ratelimit.New(redislimit.New(c, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: func() time.Time { return time.Now().Add(time.Hour) }})
	right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix, redislimit.CallerClock()), ratelimit.Config{})
	t.Cleanup(func() { _ = ahead.Close(context.Background()); _ = right.Close(context.Background()) })
	ctx := context.Background()
	for range 60 {
		if d, err := ahead.Decide(ctx, "key:full", ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	d, err := right.Decide(ctx, "key:full", ratelimittest.Free)
	if err != nil || d.Allowed || d.RetryAfter > time.Minute {
		t.Fatalf("a minute window written an hour ahead: %+v, %v; want refused for a minute at most", d, err)
	}
	for i := 0; ; i++ {
		d, err := ahead.Decide(ctx, "key:banned", ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		if d.Code == petstore.CodeAPIKeyBanned {
			break
		}
		if i == 60 {
			time.Sleep(time.Second) // past the strike grace
		}
	}
	d, err = right.Decide(ctx, "key:banned", ratelimittest.Free)
	if err != nil || d.Code != petstore.CodeAPIKeyBanned || d.RetryAfter > 15*time.Minute {
		t.Fatalf("a 15 min ban written an hour ahead: %+v, %v; want banned for 15 min at most", d, err)
	}
}

// TestIdleSharesGoBack: a process that leased spares and then fell quiet
// gives them back within a few seconds, so Redis counts what it admitted,
// and another process may use the rest of the window.
func TestIdleSharesGoBack(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "rl")
	store := redislimit.New(c, prefix)
	lim := ratelimit.New(store, ratelimit.Config{})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	pro := petstore.Limits{PerMinute: 1000, PerDay: 10000}
	for range 20 {
		if d, err := lim.Decide(ctx, "key:quiet", pro); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	used := func() int64 { return minuteUsed(t, store, "key:quiet", pro, time.Now()) }
	first := used()
	deadline := time.Now().Add(10 * time.Second)
	for used() != 20 {
		if time.Now().After(deadline) {
			t.Fatalf("Redis counts %d, then %d 10 s after the last of 20 requests, want 20: the idle share was not given back", first, used())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("Redis counted %d right after 20 requests (spares held), 20 once the share was idle", first)
}

// minuteUsed is what Redis counts in subject's minute window at now:
// every unit it granted, admitted or still held as a share.
func minuteUsed(t *testing.T, store *redislimit.Store, subject string, limits petstore.Limits, now time.Time) int64 {
	t.Helper()
	w, err := store.Usage(context.Background(), subject, ratelimit.Rates(limits), now)
	if err != nil {
		t.Fatal(err)
	}
	return w[0].Quota - w[0].Remaining
}

// TestStoppedProcessGivesSharesBack: a process that stops gives back the
// spares it leased at once, so the next process may admit the rest of
// the window: a stopped process keeps no quota hostage.
func TestStoppedProcessGivesSharesBack(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "rl")
	ctx := context.Background()
	pro := petstore.Limits{PerMinute: 1000, PerDay: 10000}
	decide := func(lim *ratelimit.Limiter) bool {
		d, err := lim.Decide(ctx, "key:stopping", pro)
		if err != nil || d.Degraded {
			t.Fatalf("%+v, %v", d, err)
		}
		return d.Allowed
	}
	first := ratelimit.New(redislimit.New(c, prefix), ratelimit.Config{})
	for range 400 {
		if !decide(first) {
			t.Fatal("refused within the quota")
		}
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	next := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix), ratelimit.Config{})
	t.Cleanup(func() { _ = next.Close(context.Background()) })
	admitted := 0
	for decide(next) {
		admitted++
	}
	if admitted != 600 {
		t.Fatalf("after a process admitted 400 of 1,000 and stopped, the next admitted %d, want the other 600", admitted)
	}
}

// TestReturnedSpareIsAdmittedElsewhere: process A leases a spare and its
// requests stop; process B fills the window and is refused. Once A's
// idle spare goes back, B admits it: a spare is held, never lost, with
// bans counted or not.
func TestReturnedSpareIsAdmittedElsewhere(t *testing.T) {
	t.Parallel()
	for _, bans := range []ratelimit.BanPolicy{{}, {Disabled: true}} {
		t.Run(fmt.Sprintf("bans disabled %v", bans.Disabled), func(t *testing.T) {
			t.Parallel()
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			store := redislimit.New(c, prefix)
			clk := testenv.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
			// Idle shares go back within 8 ban polls of a second unused.
			cfg := ratelimit.Config{Clock: clk.Now, BanPolicy: bans, BanPoll: 10 * time.Millisecond}
			a := ratelimit.New(store, cfg)
			b := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix), cfg)
			for _, l := range []*ratelimit.Limiter{a, b} {
				t.Cleanup(func() { _ = l.Close(context.Background()) })
			}
			ctx := context.Background()
			const subject = "key:spare"
			admits := func(l *ratelimit.Limiter) bool {
				d, err := l.Decide(ctx, subject, ratelimittest.Free)
				if err != nil || d.Degraded {
					t.Fatalf("%+v, %v", d, err)
				}
				return d.Allowed
			}
			used := func() int64 { return minuteUsed(t, store, subject, ratelimittest.Free, clk.Now()) }
			// A's first share is its one request; its second lends spares.
			for range 2 {
				if !admits(a) {
					t.Fatal("A refused within the quota")
				}
			}
			spares := used() - 2
			if spares <= 0 {
				t.Fatalf("Redis counts %d after A's 2 requests, want spares lent to A", used())
			}
			admitted := int64(2)
			for admits(b) {
				admitted++
			}
			if admitted+spares != 60 {
				t.Fatalf("B admitted up to %d with %d spares held by A, want 60 in all", admitted, spares)
			}
			clk.Advance(time.Second)
			for deadline := time.Now().Add(5 * time.Second); used() != admitted; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("Redis counts %d 5 s after A's spares fell idle, want the %d admitted", used(), admitted)
				}
			}
			// B saw the window full: its next request asks Redis, which
			// has room again, for exactly A's spares.
			for i := range spares {
				if !admits(b) {
					t.Fatalf("B refused request %d of the %d spares A gave back", i+1, spares)
				}
			}
			if admits(b) {
				t.Fatalf("B admitted more than the %d spares A gave back: over the quota", spares)
			}
		})
	}
}

// TestLiftReachesEveryProcess: an operator lifts a ban in Redis; every
// process that knew of it stops refusing it as banned within 1 s.
func TestLiftReachesEveryProcess(t *testing.T) {
	c := newCluster(t, ratelimit.Config{})
	direct := testenv.RedisClient(t)
	ctx := context.Background()
	for i := 0; ; i++ {
		d, err := c.lims[0].Decide(ctx, "key:lifted", ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		if d.Code == petstore.CodeAPIKeyBanned {
			break
		}
		if i == 60 {
			time.Sleep(time.Second) // past the strike grace
		}
	}
	for _, lim := range c.lims {
		if d, err := lim.Decide(ctx, "key:lifted", ratelimittest.Free); err != nil || d.Code != petstore.CodeAPIKeyBanned {
			t.Fatalf("before the lift: %+v, %v", d, err)
		}
	}
	// The operator's command: a Store of its own on the same prefix.
	prefix := c.prefix
	if ok, err := redislimit.New(direct, prefix).Lift(ctx, "key:lifted", time.Now()); err != nil || !ok {
		t.Fatalf("Lift = %v, %v", ok, err)
	}
	lifted := time.Now()
	for i, lim := range c.lims {
		for {
			d, err := lim.Decide(ctx, "key:lifted", ratelimittest.Free)
			if err == nil && d.Code != petstore.CodeAPIKeyBanned {
				break
			}
			if time.Since(lifted) > time.Second {
				t.Fatalf("process %d: %+v, %v more than 1 s after the lift, want no longer banned", i+1, d, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestBanFromAClockBehindReachesEveryProcess, with CallerClock: ban events carry the clock
// of the process that logged them. One logged by a process whose clock is
// behind is older than the last event another process applied; it must
// still reach that process through the log, so that it holds the ban
// while Redis is unreachable.
func TestBanFromAClockBehindReachesEveryProcess(t *testing.T) {
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	ctx := context.Background()
	newLimiter := func(clock func() time.Time) (*ratelimit.Limiter, *faultproxy.Proxy) {
		p := newProxy(t)
		l := ratelimit.New(redislimit.New(proxied(t, p), prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clock})
		t.Cleanup(func() { _ = l.Close(context.Background()) })
		return l, p
	}
	ahead, _ := newLimiter(nil)
	behind, _ := newLimiter(func() time.Time { return time.Now().Add(-3 * time.Second) })
	watcher, link := newLimiter(nil)
	ban := func(l *ratelimit.Limiter, subject string) {
		t.Helper()
		for i := 0; ; i++ {
			d, err := l.Decide(ctx, subject, ratelimittest.Free)
			if err != nil {
				t.Fatal(err)
			}
			if d.Code == petstore.CodeAPIKeyBanned {
				return
			}
			if i == 60 {
				time.Sleep(time.Second) // past the strike grace
			}
			if i > 200 {
				t.Fatalf("%s: no ban after 200 requests", subject)
			}
		}
	}
	refuses := func(subject string) bool {
		d, err := watcher.Decide(ctx, subject, ratelimittest.Free)
		return err == nil && d.Code == petstore.CodeAPIKeyBanned
	}
	ban(ahead, "key:first")
	for deadline := time.Now().Add(time.Second); !refuses("key:first"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher does not refuse the first ban within 1 s")
		}
	}
	ban(behind, "key:second")
	time.Sleep(time.Second) // the log's promise: within 1 s
	link.Pause()
	defer link.Restore()
	if !refuses("key:second") {
		t.Fatal("a ban logged by a process whose clock is 3 s behind did not reach another process within 1 s")
	}
}
