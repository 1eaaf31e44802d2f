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
			ps := newSkewedProcs(t, ratelimit.Config{}, -90*time.Second, 0, 90*time.Second, time.Hour)
			banned := banBy(t, ps[0].lim, "key:abuser")
			end := time.Now().Add(banned.RetryAfter) // in real time
			// Ends are read in whole seconds: not early, at most 2 s late.
			near := func(what string, got time.Time) {
				t.Helper()
				if got.Before(end.Add(-10*time.Millisecond)) || got.After(end.Add(2*time.Second)) {
					t.Errorf("%s: the ban ends %v from when the banning process said", what, got.Sub(end))
				}
			}
			for _, p := range ps {
				bans, err := p.store.Bans(ctx, p.now())
				if err != nil || len(bans) != 1 {
					t.Fatalf("process %v ahead lists %v, %v; want the ban", p.skew, bans, err)
				}
				near(fmt.Sprintf("process %v ahead, Bans", p.skew), bans[0].Until.Add(-p.skew))
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
				near(fmt.Sprintf("process %v ahead, Redis %s, Retry-After", p.skew, tc.name), time.Now().Add(d.RetryAfter))
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
