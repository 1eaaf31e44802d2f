package redislimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// These tests run processes whose wall clocks are far apart (real time
// plus a skew) on Redis's clock, the default, through fault proxies.

// skewedProc is a process of the skew tests: a Limiter whose clock is
// real time plus skew, over its own Redis client behind its own proxy.
type skewedProc struct {
	skew  time.Duration
	store *redislimit.Store
	lim   *ratelimit.Limiter
	link  *faultproxy.Proxy
}

func (p *skewedProc) now() time.Time { return time.Now().Add(p.skew) }

// newSkewedProcs starts one process per skew on one prefix.
func newSkewedProcs(t *testing.T, cfg ratelimit.Config, skews ...time.Duration) []*skewedProc {
	t.Helper()
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	var out []*skewedProc
	for _, skew := range skews {
		p := &skewedProc{skew: skew, link: newProxy(t)}
		p.store = redislimit.New(proxied(t, p.link), prefix)
		c := cfg
		c.Clock = p.now
		p.lim = ratelimit.New(p.store, c)
		t.Cleanup(func() { _ = p.lim.Close(context.Background()) })
		// Warm the pool and the script cache, as a running server has.
		if _, err := p.lim.Decide(context.Background(), "key:warm", ratelimittest.Free); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// banBy has l decide subject until it is banned, and returns the banning
// decision.
func banBy(t *testing.T, l *ratelimit.Limiter, subject string) ratelimit.Decision {
	t.Helper()
	for i := 0; ; i++ {
		d, err := l.Decide(context.Background(), subject, ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		if d.Code == petstore.CodeAPIKeyBanned {
			return d
		}
		if i == 60 {
			time.Sleep(time.Second) // past the strike grace
		}
		if i > 200 {
			t.Fatalf("%s: no ban after 200 requests", subject)
		}
	}
}

// TestBanReachesSkewedProcesses: a ban started by a process whose clock
// is 90 s behind reaches, through the ban log, processes 90 s and an hour
// ahead that never decided the key, within 1 s: each lists it (Bans) as
// ending when the banning process said, in its own time, and once its
// link to Redis is cut or paused refuses it with a Retry-After that is
// not early (nor more than 2 s late). A lift from the process an hour
// ahead reaches them all the same way.
func TestBanReachesSkewedProcesses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*faultproxy.Proxy)
	}{
		{"cut", (*faultproxy.Proxy).Cut},
		{"paused", (*faultproxy.Proxy).Pause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ps := newSkewedProcs(t, ratelimit.Config{StoreTimeout: 200 * time.Millisecond, BreakerCooldown: 100 * time.Millisecond}, -90*time.Second, 0, 90*time.Second, time.Hour)
			banBy(t, ps[0].lim, "key:abuser")
			// The ban's end in real time, as the process on it lists it.
			bans, err := ps[1].store.Bans(ctx, time.Now())
			if err != nil || len(bans) != 1 {
				t.Fatalf("the process on real time lists %v, %v; want the ban", bans, err)
			}
			end := bans[0].Until
			// A time told through Redis is off by the link's latency;
			// Retry-After counts whole seconds, rounded up.
			near := func(what string, got time.Time, late time.Duration) {
				t.Helper()
				if got.Before(end.Add(-100*time.Millisecond)) || got.After(end.Add(late)) {
					t.Errorf("%s: the ban ends %v from when the banning process said", what, got.Sub(end))
				}
			}
			for _, p := range ps {
				bans, err := p.store.Bans(ctx, p.now())
				if err != nil || len(bans) != 1 {
					t.Fatalf("process %v ahead lists %v, %v; want the ban", p.skew, bans, err)
				}
				near(fmt.Sprintf("process %v ahead, Bans", p.skew), bans[0].Until.Add(-p.skew), 100*time.Millisecond)
			}
			time.Sleep(time.Second) // the log's promise: within 1 s
			for _, p := range ps[1:] {
				tc.fault(p.link)
			}
			for _, p := range ps[1:] {
				d, err := p.lim.Decide(ctx, "key:abuser", ratelimittest.Free)
				if err != nil || d.Code != petstore.CodeAPIKeyBanned {
					t.Errorf("process %v ahead, Redis %s: %+v, %v; want api_key_banned", p.skew, tc.name, d, err)
					continue
				}
				near(fmt.Sprintf("process %v ahead, Redis %s, Retry-After", p.skew, tc.name), time.Now().Add(d.RetryAfter), 1100*time.Millisecond)
			}
			if t.Failed() {
				return
			}

			for _, p := range ps[1:] {
				p.link.Restore()
			}
			for _, p := range ps {
				waitShared(t, p.lim)
			}
			if ok, err := ps[3].store.Lift(ctx, "key:abuser", ps[3].now()); err != nil || !ok {
				t.Fatalf("lift from the process an hour ahead: %v, %v; want a ban lifted", ok, err)
			}
			time.Sleep(time.Second) // the log's promise: within 1 s
			for _, p := range ps {
				tc.fault(p.link)
			}
			for _, p := range ps {
				if d, err := p.lim.Decide(ctx, "key:abuser", ratelimittest.Free); err != nil || d.Code == petstore.CodeAPIKeyBanned {
					t.Errorf("process %v ahead, 1 s after the lift, Redis %s: %+v, %v; want no longer banned", p.skew, tc.name, d, err)
				}
			}
		})
	}
}

// waitShared decides until lim's decisions are Redis's again, not local.
func waitShared(t *testing.T, lim *ratelimit.Limiter) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err := lim.Decide(context.Background(), "key:probe", ratelimittest.Free)
		if err == nil && !d.Degraded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis back for 30 s, decisions still local: %+v, %v", d, err)
		}
	}
}

// TestSkewedDebtWindowEndsWhenItsProcessSaid: a process whose clock is
// far off decided a key on its own while Redis failed, in a minute window
// it started itself, and told its clients the window ends in 1.9 s (its
// debt's End, in its own time). Once it settles the debt, processes on
// other clocks refuse the key until then and no longer: their
// Retry-After is not early, and a client that waited it is admitted.
func TestSkewedDebtWindowEndsWhenItsProcessSaid(t *testing.T) {
	for _, skew := range []time.Duration{-90 * time.Second, 90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := context.Background()
			ps := newSkewedProcs(t, ratelimit.Config{}, skew, -skew, 0)
			debtor := ps[0]
			// In real time; a fraction of a second short of a whole one, so
			// that a Retry-After (whole seconds, rounded up) told before it
			// passes 100 ms after it, more than a link's latency.
			ends := time.Now().Add(1900 * time.Millisecond)
			rates := ratelimit.Rates(ratelimittest.Free)
			now := debtor.now()
			_, err := debtor.store.Lease(ctx, ratelimit.LeaseRequest{
				Subject: "key:debt", Rates: rates, Now: now, Ban: ratelimit.DefaultBanPolicy(),
				Settle: []ratelimit.Settlement{
					{Debt: ratelimittest.Free.PerMinute, End: ends.Add(skew)},
					{Debt: ratelimittest.Free.PerMinute, End: now.Add(24 * time.Hour)},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			var back time.Time // when the last client refused may come back
			for _, p := range ps[1:] {
				d, err := p.lim.Decide(ctx, "key:debt", ratelimittest.Free)
				if err != nil || d.Allowed {
					t.Fatalf("process %v ahead: %+v, %v; want refused until the debt's window ends", p.skew, d, err)
				}
				b := time.Now().Add(d.RetryAfter)
				if b.Before(ends) || b.After(ends.Add(1100*time.Millisecond)) {
					t.Errorf("process %v ahead: Retry-After %v ends %v from when the debtor said", p.skew, d.RetryAfter, b.Sub(ends))
				}
				if b.After(back) {
					back = b
				}
			}
			time.Sleep(time.Until(back))
			for _, p := range ps {
				if d, err := p.lim.Decide(ctx, "key:debt", ratelimittest.Free); err != nil || !d.Allowed {
					t.Errorf("process %v ahead, once the Retry-After it gave passed: %+v, %v; want admitted", p.skew, d, err)
				}
			}
		})
	}
}

// TestSkewedProcessGivesSharesBack: a process whose clock is far off that
// stops gives back the spares it leased, and another process on another
// clock admits the rest of the window: a return is matched to its window
// whatever the clocks.
func TestSkewedProcessGivesSharesBack(t *testing.T) {
	t.Parallel()
	pro := petstore.Limits{PerMinute: 1000, PerDay: 10000}
	for _, skew := range []time.Duration{-90 * time.Second, 90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ps := newSkewedProcs(t, ratelimit.Config{}, skew, -skew)
			decide := func(p *skewedProc) bool {
				d, err := p.lim.Decide(ctx, "key:stopping", pro)
				if err != nil || d.Degraded {
					t.Fatalf("%+v, %v", d, err)
				}
				return d.Allowed
			}
			for range 400 {
				if !decide(ps[0]) {
					t.Fatal("refused within the quota")
				}
			}
			if err := ps[0].lim.Close(ctx); err != nil {
				t.Fatal(err)
			}
			admitted := 0
			for decide(ps[1]) {
				admitted++
			}
			if admitted != 600 {
				t.Fatalf("after a process %v ahead admitted 400 of 1,000 and stopped, one %v ahead admitted %d, want the other 600", skew, -skew, admitted)
			}
		})
	}
}

// TestSkewedBounds: the bounds of the table in docs/rate-limits.md hold
// for processes whose clocks are 90 s behind, 90 s ahead and an hour
// ahead: quiet, the quota exactly; through a slow link, and over 2 s of a
// cut or a pause and the minute after (debts told back on each one's
// clock), N × quota.
func TestSkewedBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*faultproxy.Proxy) // nil: quiet
		least int64
		most  int64
	}{
		{"quiet", nil, 55, 60},
		{"slow", func(p *faultproxy.Proxy) { p.SetLatency(100 * time.Millisecond) }, 60, procs * 60},
		{"cut", (*faultproxy.Proxy).Cut, 60, procs * 60},
		{"paused", (*faultproxy.Proxy).Pause, 60, procs * 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := newSkewedProcs(t, ratelimit.Config{BreakerCooldown: 100 * time.Millisecond}, -90*time.Second, 90*time.Second, time.Hour)
			c := &cluster{}
			for _, p := range ps {
				c.lims = append(c.lims, p.lim)
			}
			var ty tally
			if tc.fault != nil {
				for _, p := range ps {
					tc.fault(p.link)
				}
			}
			began := time.Now()
			c.burst(t, "key:fresh", 200, &ty)
			if tc.fault != nil {
				time.Sleep(time.Until(began.Add(2 * time.Second)))
				for _, p := range ps {
					p.link.Restore()
				}
				for _, p := range ps {
					waitShared(t, p.lim)
				}
			}
			during := ty.admitted.Load()
			// The minute after: what each process admitted alone is owed.
			for range 3 {
				c.burst(t, "key:fresh", 200, &ty)
			}
			t.Logf("%s: %d admitted in the first burst, %d in all with 3 × 600 more after it, %d decided locally",
				tc.name, during, ty.admitted.Load(), ty.local.Load())
			if got := ty.admitted.Load(); got < tc.least || got > tc.most {
				t.Fatalf("admitted %d, want %d to %d", got, tc.least, tc.most)
			}
		})
	}
}

// TestSkewedProcessStrikesAddUp: a process whose clock is far off counts
// a client's refusals as strikes in Redis (20), then, while its link to
// Redis is cut, in memory (15 more); told to Redis once the link is back,
// they fall in the same strike window as the first 20, and the 35 ban the
// key (the policy tolerates 30).
func TestSkewedProcessStrikesAddUp(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{-90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newSkewedProcs(t, ratelimit.Config{BreakerCooldown: 100 * time.Millisecond}, skew)[0]
			refuse := func(n int) {
				t.Helper()
				for range n {
					if d, err := p.lim.Decide(ctx, "key:striker", ratelimittest.Free); err != nil || d.Code != petstore.CodeRateLimited {
						t.Fatalf("%+v, %v; want rate_limited", d, err)
					}
				}
			}
			fill(t, p.lim, "key:striker")
			refuse(1)               // the first strike starts the strike window
			time.Sleep(time.Second) // past its grace, strikes count
			refuse(19)
			p.link.Cut()
			refuse(15)
			p.link.Restore()
			waitShared(t, p.lim)
			d, err := p.lim.Decide(ctx, "key:striker", ratelimittest.Free)
			if err != nil || d.Code != petstore.CodeAPIKeyBanned {
				t.Fatalf("after 35 strikes, 15 of them told late: %+v, %v; want api_key_banned", d, err)
			}
		})
	}
}
