package redislimit_test

import (
	"context"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// TestRetryAfterOfAnOutageIsNeverEarly: a key that spends its minute
// while Redis is cut, paused or slower than the store timeout is refused
// with a Retry-After; once Redis is back and the process has told it what
// it admitted alone, a client that waited exactly that long is admitted,
// not refused again.
func TestRetryAfterOfAnOutageIsNeverEarly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*faultproxy.Proxy)
	}{
		{"cut", (*faultproxy.Proxy).Cut},
		{"pause", (*faultproxy.Proxy).Pause},
		{"slower than the timeout", func(p *faultproxy.Proxy) { p.SetLatency(150 * time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, direct, "rl")
			p := newProxy(t)
			var clk testClock
			lim := ratelimit.New(redislimit.New(proxied(t, p), prefix, redislimit.CallerClock()), ratelimit.Config{
				Clock: clk.Now, StoreTimeout: 200 * time.Millisecond,
			})
			t.Cleanup(func() { _ = lim.Close(context.Background()) })
			ctx := context.Background()
			decide := func(sub string) ratelimit.Decision {
				t.Helper()
				d, err := lim.Decide(ctx, sub, ratelimittest.Free)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			// Redis decides, as it does in a running server, before the
			// outage: the first call opens a connection through the new
			// proxy, which a loaded machine may not do within the 200 ms
			// store timeout, so wait for it.
			untilRedisDecides := func(sub, after string) {
				t.Helper()
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					clk.Advance(100 * time.Millisecond)
					if d, err := lim.Decide(ctx, sub, ratelimittest.Free); err == nil && !d.Degraded {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s, decisions still local after 30 s", after)
					}
				}
			}
			untilRedisDecides("key:warm", "Redis up")
			tc.fault(p)
			clk.Advance(time.Second) // no success for a StoreTimeout: the breaker may open
			admitted := 0
			for range 60 {
				if decide("key:outage").Allowed {
					admitted++
				}
			}
			refused := decide("key:outage")
			if refused.Allowed || refused.Code != petstore.CodeRateLimited {
				t.Fatalf("after %d admitted during the outage: %+v, want rate_limited", admitted, refused)
			}
			back := refused.At.Add(refused.RetryAfter)

			clk.Advance(5 * time.Second) // the outage lasts a few seconds
			p.Restore()
			untilRedisDecides("key:probe", "Redis back")
			// The process tells Redis what it admitted alone (its idle
			// settlement does, every few seconds).
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				n, _ := direct.HGet(ctx, prefix+"key:outage", "c:60000").Int64()
				if n >= int64(admitted) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Redis counts %d of the %d admitted during the outage after 30 s", n, admitted)
				}
			}

			clk.Advance(back.Sub(clk.Now()))
			if d := decide("key:outage"); !d.Allowed {
				t.Fatalf("a client that waited the Retry-After (%v) of a refusal during the outage was refused again: %s, Retry-After %v",
					refused.RetryAfter, d.Code, d.RetryAfter)
			}
		})
	}
}

// TestReachableAgainWithoutRequests: a limiter that fails closed reports
// Redis unreachable while it is cut (a readiness check fails on it), and
// reachable again once it is back, with no request deciding anything in
// between: behind a load balancer that honours the readiness check, none
// would come.
func TestReachableAgainWithoutRequests(t *testing.T) {
	t.Parallel()
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	p := newProxy(t)
	var clk testClock
	lim := ratelimit.New(redislimit.New(proxied(t, p), prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clk.Now, FailClosed: true})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	if d, err := lim.Decide(ctx, "key:ready", ratelimittest.Free); err != nil || !d.Allowed {
		t.Fatalf("before the cut: %+v, %v", d, err)
	}
	p.Cut()
	clk.Advance(2 * time.Second) // no success for a StoreTimeout: failures open the breaker
	for range 6 {
		if _, err := lim.Decide(ctx, "key:other", ratelimittest.Free); petstore.ErrorCode(err) != petstore.CodeUnavailable {
			t.Fatalf("failing closed while Redis is cut: %v, want unavailable", err)
		}
	}
	if st := lim.Status(); st.Ready() || !st.Unreachable {
		t.Fatalf("Status while Redis is cut = %+v, want unreachable, not ready", st)
	}
	p.Restore()
	for deadline := time.Now().Add(5 * time.Second); !lim.Status().Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Redis back for 5 s with no request: Status = %+v, want ready", lim.Status())
		}
	}
	if d, err := lim.Decide(ctx, "key:ready", ratelimittest.Free); err != nil || !d.Allowed || d.Degraded {
		t.Fatalf("after the cut: %+v, %v; want admitted by Redis", d, err)
	}
}
