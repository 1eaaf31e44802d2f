package redislimit_test

import (
	"context"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// TestBanFromAClockAheadEndsWhenRetryAfterSays: a ban started by a
// process whose clock runs ahead of another's is, at the other, over when
// the Retry-After it gave has passed, and its ban level is forgotten a day
// after that end, not a day after the end the clock ahead wrote.
func TestBanFromAClockAheadEndsWhenRetryAfterSays(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Second, 90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			clk := testenv.NewClock(time.Now().Truncate(time.Second))
			ahead := ratelimit.New(redislimit.New(c, prefix), ratelimit.Config{Clock: func() time.Time { return clk.Now().Add(skew) }})
			right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix), ratelimit.Config{Clock: clk.Now})
			t.Cleanup(func() { _ = ahead.Close(context.Background()); _ = right.Close(context.Background()) })
			ctx := context.Background()
			ban := func(l *ratelimit.Limiter) ratelimit.Decision {
				t.Helper()
				for i := 0; ; i++ {
					d, err := l.Decide(ctx, "key:skew", ratelimittest.Free)
					if err != nil {
						t.Fatal(err)
					}
					if d.Code == petstore.CodeAPIKeyBanned {
						return d
					}
					if i == 60 {
						clk.Advance(2 * time.Second) // past the strike grace
					}
					if i > 200 {
						t.Fatal("no ban after 200 requests")
					}
				}
			}
			ban(ahead)
			d, err := right.Decide(ctx, "key:skew", ratelimittest.Free)
			if err != nil || d.Code != petstore.CodeAPIKeyBanned || d.RetryAfter > 15*time.Minute {
				t.Fatalf("the other process: %+v, %v; want banned for 15 min at most", d, err)
			}
			clk.Advance(d.RetryAfter)
			if d, err := right.Decide(ctx, "key:skew", ratelimittest.Free); err != nil || !d.Allowed {
				t.Fatalf("once its Retry-After has passed: %+v, %v; want admitted", d, err)
			}
			// A day after the ban's end the level is forgotten: the next
			// ban is a first one again, 15 min, not a doubled one.
			clk.Advance(24*time.Hour + time.Second)
			if d := ban(right); d.RetryAfter != 15*time.Minute {
				t.Fatalf("a ban a day after the last one's end lasts %v, want 15m0s", d.RetryAfter)
			}
		})
	}
}

// TestClocksSecondsApartKeepTheQuota: two processes whose clocks are 2 s
// apart, either way, admit together the minute's quota at most, however
// their requests interleave. (Clocks a minute or more apart do not: each
// takes the other's minute windows for over; docs/rate-limits.md says so.)
func TestClocksSecondsApartKeepTheQuota(t *testing.T) {
	for _, skew := range []time.Duration{-2 * time.Second, 2 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			clk := testenv.NewClock(time.Now().Truncate(time.Second))
			skewed := ratelimit.New(redislimit.New(c, prefix), ratelimit.Config{Clock: func() time.Time { return clk.Now().Add(skew) }})
			right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix), ratelimit.Config{Clock: clk.Now})
			t.Cleanup(func() { _ = skewed.Close(context.Background()); _ = right.Close(context.Background()) })
			ctx := context.Background()
			admitted := 0
			for range 50 { // 5 s of one minute
				for _, l := range []*ratelimit.Limiter{right, right, right, skewed} {
					d, err := l.Decide(ctx, "key:apart", ratelimittest.Free)
					if err != nil {
						t.Fatal(err)
					}
					if d.Allowed {
						admitted++
					}
				}
				clk.Advance(100 * time.Millisecond)
			}
			if admitted != int(ratelimittest.Free.PerMinute) {
				t.Fatalf("admitted %d of 200 in 5 s, want the minute's %d", admitted, ratelimittest.Free.PerMinute)
			}
		})
	}
}
