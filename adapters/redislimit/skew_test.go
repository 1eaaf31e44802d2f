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

// TestBanFromAClockAheadEndsWhenRetryAfterSays, with CallerClock: a ban started by a
// process whose clock runs ahead of another's is, at the other, over when
// the Retry-After it gave has passed, and its ban level is forgotten a day
// after that end, not a day after the end the clock ahead wrote.
func TestBanFromAClockAheadEndsWhenRetryAfterSays(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{2 * time.Second, 90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			clk := testenv.NewClock(time.Now().Truncate(time.Second))
			ahead := ratelimit.New(redislimit.New(c, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: func() time.Time { return clk.Now().Add(skew) }})
			right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clk.Now})
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

// TestClocksSecondsApartKeepTheQuota: with CallerClock, two processes
// whose clocks are 2 s apart, either way, admit together the minute's
// quota at most, however their requests interleave. (Clocks a minute or
// more apart do not: each takes the other's minute windows for over;
// docs/rate-limits.md says so. Redis's clock, the default, has no such
// limit: TestClocksMinutesApartKeepTheQuota.)
func TestClocksSecondsApartKeepTheQuota(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{-2 * time.Second, 2 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			clk := testenv.NewClock(time.Now().Truncate(time.Second))
			skewed := ratelimit.New(redislimit.New(c, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: func() time.Time { return clk.Now().Add(skew) }})
			right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clk.Now})
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

// TestClocksMinutesApartKeepTheQuota: processes whose clocks are a minute
// or more apart still admit together the minute's quota at most, since
// the windows are measured on Redis's clock.
func TestClocksMinutesApartKeepTheQuota(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{-90 * time.Second, 90 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			skewed := ratelimit.New(redislimit.New(c, prefix), ratelimit.Config{Clock: func() time.Time { return time.Now().Add(skew) }})
			right := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix), ratelimit.Config{})
			t.Cleanup(func() { _ = skewed.Close(context.Background()); _ = right.Close(context.Background()) })
			ctx := context.Background()
			admitted := 0
			for range 100 { // well within one minute
				for _, l := range []*ratelimit.Limiter{right, skewed, right, skewed} {
					d, err := l.Decide(ctx, "key:apart", ratelimittest.Free)
					if err != nil {
						t.Fatal(err)
					}
					if d.Allowed {
						admitted++
					}
				}
			}
			if admitted != int(ratelimittest.Free.PerMinute) {
				t.Fatalf("admitted %d of 400, want the minute's %d", admitted, ratelimittest.Free.PerMinute)
			}
		})
	}
}

// TestSkewedProcessesAgreeOnBansAndUsage: with Redis's clock, a ban one
// process starts, the ban list, a subject's usage and a lift read the
// same at processes whose clocks are 90 s apart, each in its own time.
func TestSkewedProcessesAgreeOnBansAndUsage(t *testing.T) {
	for _, skew := range []time.Duration{-90 * time.Second, 90 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			c := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, c, "rl")
			skewedNow := func() time.Time { return time.Now().Add(skew) }
			skewedStore := redislimit.New(c, prefix)
			rightStore := redislimit.New(testenv.RedisClient(t), prefix)
			skewed := ratelimit.New(skewedStore, ratelimit.Config{Clock: skewedNow})
			right := ratelimit.New(rightStore, ratelimit.Config{})
			t.Cleanup(func() { _ = skewed.Close(context.Background()); _ = right.Close(context.Background()) })
			ctx := context.Background()
			near := func(what string, got, want time.Time) {
				t.Helper()
				if d := got.Sub(want); d < -2*time.Second || d > 2*time.Second {
					t.Errorf("%s: %v, want %v (±2 s)", what, got, want)
				}
			}

			for i := range 5 {
				if d, err := skewed.Decide(ctx, "key:used", ratelimittest.Free); err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v, %v", i, d, err)
				}
			}
			_ = skewed.Close(ctx) // gives back its unused share
			skewed = ratelimit.New(skewedStore, ratelimit.Config{Clock: skewedNow})
			for _, p := range []struct {
				name  string
				store *redislimit.Store
				now   time.Time
			}{{"the skewed process", skewedStore, skewedNow()}, {"the other", rightStore, time.Now()}} {
				ws, err := p.store.Usage(ctx, "key:used", ratelimit.Rates(ratelimittest.Free), p.now)
				if err != nil {
					t.Fatal(err)
				}
				if ws[0].Remaining != 55 {
					t.Errorf("%s: usage %+v, want 55 of the minute left", p.name, ws[0])
				}
				near(p.name+": the minute's reset", ws[0].Reset, p.now.Add(time.Minute))
			}

			var banned ratelimit.Decision
			for i := 0; banned.Code != petstore.CodeAPIKeyBanned; i++ {
				d, err := skewed.Decide(ctx, "key:skew", ratelimittest.Free)
				if err != nil {
					t.Fatal(err)
				}
				banned = d
				if i == 60 {
					time.Sleep(time.Second) // past the strike grace
				}
				if i > 200 {
					t.Fatal("no ban after 200 requests")
				}
			}
			d, err := right.Decide(ctx, "key:skew", ratelimittest.Free)
			if err != nil || d.Code != petstore.CodeAPIKeyBanned {
				t.Fatalf("the other process: %+v, %v; want banned", d, err)
			}
			if diff := d.RetryAfter - banned.RetryAfter; diff < -2*time.Second || diff > 2*time.Second {
				t.Errorf("Retry-After %v at the other process, %v at the banning one", d.RetryAfter, banned.RetryAfter)
			}
			bans, err := rightStore.Bans(ctx, time.Now())
			if err != nil || len(bans) != 1 {
				t.Fatalf("bans listed by the other process: %v, %v", bans, err)
			}
			near("the listed ban's end", bans[0].Until, time.Now().Add(banned.RetryAfter))

			if ok, err := skewedStore.Lift(ctx, "key:skew", skewedNow()); err != nil || !ok {
				t.Fatalf("lift from the skewed process: %v, %v; want a ban lifted", ok, err)
			}
			lifted := time.Now()
			for {
				d, err := right.Decide(ctx, "key:skew", ratelimittest.Free)
				if err == nil && d.Code != petstore.CodeAPIKeyBanned {
					break
				}
				if time.Since(lifted) > time.Second {
					t.Fatalf("the other process: %+v, %v more than 1 s after the lift", d, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestAdminReportsBoundClockAhead, with CallerClock: the admin reports
// (Usage, Bans) of windows and a ban that a process whose clock runs an
// hour ahead wrote hold them for their length at most, as Decide does,
// not an hour more.
func TestAdminReportsBoundClockAhead(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "rl")
	clk := testenv.NewClock(time.Now().Truncate(time.Second))
	store := redislimit.New(c, prefix, redislimit.CallerClock())
	ahead := ratelimit.New(store, ratelimit.Config{Clock: func() time.Time { return clk.Now().Add(time.Hour) }})
	t.Cleanup(func() { _ = ahead.Close(context.Background()) })
	ctx := context.Background()
	for i := 0; ; i++ {
		d, err := ahead.Decide(ctx, "key:skew", ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		if d.Code == petstore.CodeAPIKeyBanned {
			break
		}
		if i == 60 {
			clk.Advance(2 * time.Second) // past the strike grace
		}
		if i > 200 {
			t.Fatal("no ban after 200 requests")
		}
	}
	now := clk.Now()
	windows, err := store.Usage(ctx, "key:skew", ratelimit.Rates(ratelimittest.Free), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range windows {
		if w.Reset.After(now.Add(w.Length)) {
			t.Errorf("Usage: the %s window resets in %v, want %v at most", w.Name, w.Reset.Sub(now), w.Length)
		}
	}
	bans, err := store.Bans(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(bans) != 1 || bans[0].Until.After(now.Add(15*time.Minute)) {
		t.Fatalf("Bans = %+v at %v; want key:skew banned for 15 min at most", bans, now)
	}
}
