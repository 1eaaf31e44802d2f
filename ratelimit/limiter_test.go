package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// brokenStore fails the way a counter store can fail: with an error, by
// hanging until the deadline, or by panicking. The real unreachable-Redis
// cases run in adapters/redislimit.
type brokenStore struct{ mode string }

func (s brokenStore) Take(ctx context.Context, _ ratelimit.Request) (ratelimit.Result, error) {
	switch s.mode {
	case "hang":
		<-ctx.Done()
		return ratelimit.Result{}, ctx.Err()
	case "panic":
		panic("store bug")
	case "short":
		return ratelimit.Result{Allowed: true}, nil // no windows
	}
	return ratelimit.Result{}, errors.New("connection refused")
}

func TestStoreFailure(t *testing.T) {
	for _, mode := range []string{"error", "hang", "panic", "short"} {
		for _, open := range []bool{true, false} {
			name := mode + "/closed"
			if open {
				name = mode + "/open"
			}
			t.Run(name, func(t *testing.T) {
				var logs bytes.Buffer
				now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				lim := ratelimit.New(brokenStore{mode}, ratelimit.Config{
					FailClosed: !open, StoreTimeout: 20 * time.Millisecond, Clock: func() time.Time { return now },
					Logger: slog.New(slog.NewTextHandler(&logs, nil)), LogInterval: time.Minute,
				})
				// Failing closed refuses only while the store is unreachable:
				// a call that merely timed out is decided locally.
				local := open || mode == "hang"
				for i := range 3 {
					d, err := lim.Decide(context.Background(), "key:secret-id", ratelimittest.Free)
					if local {
						if err != nil || !d.Allowed || !d.Degraded || d.Windows[1].Remaining != int64(999-i) {
							t.Fatalf("request %d: %+v, %v; want admitted by the local fallback, %d left today", i, d, err, 999-i)
						}
					} else if got := petstore.ErrorCode(err); got != petstore.CodeUnavailable {
						t.Fatalf("fail closed: %v (code %q), want unavailable", err, got)
					}
					if i == 1 {
						now = now.Add(2 * time.Minute) // the next failure logs again
					}
				}
				if got := strings.Count(logs.String(), "rate limit store failed"); got != 2 {
					t.Fatalf("logged %d times over 3 failures in two intervals, want 2:\n%s", got, logs.String())
				}
				if strings.Contains(logs.String(), "secret-id") {
					t.Fatal("the log names the subject")
				}
				st := lim.Status()
				if !lim.Degraded() || lim.Failures() != 3 || !st.Degraded || st.Unreachable != (mode != "hang") || st.Since.IsZero() {
					t.Fatalf("Degraded %v Failures %d Status %+v, want degraded, 3 failures, unreachable unless it hung", lim.Degraded(), lim.Failures(), st)
				}
				if st.Ready() != (open || mode == "hang") {
					t.Fatalf("Ready = %v for %s", st.Ready(), name)
				}
			})
		}
	}
}

// switchStore is a shared store that can be made to fail: a MemoryStore
// behind a switch, counting the calls that reach it. The real unreachable
// and slow Redis cases run in adapters/redislimit, through a fault proxy.
type switchStore struct {
	inner *ratelimit.MemoryStore
	mu    sync.Mutex
	mode  string // "" healthy, else a brokenStore mode
	calls int
}

func (s *switchStore) set(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

func (s *switchStore) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *switchStore) Take(ctx context.Context, req ratelimit.Request) (ratelimit.Result, error) {
	s.mu.Lock()
	mode := s.mode
	s.calls++
	s.mu.Unlock()
	if mode != "" {
		return brokenStore{mode}.Take(ctx, req)
	}
	return s.inner.Take(ctx, req)
}

// TestFallbackKeepsKnownLimits checks that a failing shared store never
// means unlimited admission: the local fallback starts from what the
// shared store last said (a full window stays full, a ban stays in force)
// and limits a subject it has not seen to the plan's quota.
func TestFallbackKeepsKnownLimits(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	store := &switchStore{inner: ratelimit.NewMemoryStore()}
	lim := ratelimit.New(store, ratelimit.Config{Clock: func() time.Time { return now }})
	ctx := context.Background()
	decide := func(sub string) ratelimit.Decision {
		t.Helper()
		d, err := lim.Decide(ctx, sub, ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for range 60 {
		decide("key:full")
	}
	for i := range 60 + 31 {
		if i == 61 {
			now = now.Add(time.Second) // past the strike grace
		}
		decide("key:banned")
	}
	for range 50 {
		decide("key:some")
	}
	if d := decide("key:banned"); d.Code != petstore.CodeAPIKeyBanned {
		t.Fatalf("key:banned is %q before the outage, want banned", d.Code)
	}

	store.set("error")
	if d := decide("key:full"); d.Allowed || !d.Degraded || d.Code != petstore.CodeRateLimited || d.RetryAfter <= 0 {
		t.Fatalf("full key during the outage: %+v, want refused locally with a Retry-After", d)
	}
	if d := decide("key:banned"); d.Code != petstore.CodeAPIKeyBanned || !d.Degraded || d.RetryAfter < 14*time.Minute {
		t.Fatalf("banned key during the outage: %+v, want the known ban in force", d)
	}
	admitted := 0
	for range 100 {
		if decide("key:some").Allowed {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("a key with 50 used admitted %d more during the outage, want the 10 left", admitted)
	}
	admitted = 0
	for range 200 {
		if decide("key:new").Allowed {
			admitted++
		}
	}
	if admitted != 60 {
		t.Fatalf("a new key admitted %d of 200 during the outage, want the plan's 60", admitted)
	}
	if st := lim.Status(); !st.Degraded || st.LocalDecisions == 0 {
		t.Fatalf("Status during the outage = %+v", st)
	}
}

// TestBreaker checks that a store failing again and again is taken for
// down (not called, so no request waits for its timeout), probed once per
// cool-down, and used again after the first probe that succeeds; the
// outage is logged once when it starts and once when it ends.
func TestBreaker(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	store := &switchStore{inner: ratelimit.NewMemoryStore()}
	lim := ratelimit.New(store, ratelimit.Config{
		Clock: func() time.Time { return now }, FailClosed: true,
		StoreTimeout: 20 * time.Millisecond, BreakerFailures: 5, BreakerCooldown: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	ctx := context.Background()
	if _, err := lim.Decide(ctx, "key:k", ratelimittest.Free); err != nil {
		t.Fatal(err)
	}
	// Timeouts are a slow store: decided locally, even failing closed.
	store.set("hang")
	now = now.Add(time.Second)
	for i := range 4 {
		d, err := lim.Decide(ctx, "key:k", ratelimittest.Free)
		if err != nil || !d.Allowed || !d.Degraded {
			t.Fatalf("timeout %d: %+v, %v; want decided locally", i+1, d, err)
		}
	}
	// Five in a row with no success: taken for down, so not called, but
	// only slow: still decided locally, failing closed too (issue 28).
	if d, err := lim.Decide(ctx, "key:k", ratelimittest.Free); err != nil || !d.Degraded {
		t.Fatalf("fifth timeout in a row: %+v, %v; want decided locally", d, err)
	}
	st := lim.Status()
	if st.Unreachable || !st.Ready() {
		t.Fatalf("after 5 timeouts in a row: %+v, want slow, not unreachable, and ready", st)
	}
	calls := store.Calls()
	for range 10 {
		if d, err := lim.Decide(ctx, "key:k", ratelimittest.Free); err != nil || !d.Degraded {
			t.Fatalf("while taken for down: %+v, %v, want decided locally", d, err)
		}
	}
	if got := store.Calls() - calls; got != 0 {
		t.Fatalf("while down, %d calls reached the store, want none", got)
	}
	// After the cool-down one probe goes; it fails, so down again. Now
	// the store refuses connections: failing closed refuses requests.
	store.set("error")
	now = now.Add(time.Second)
	_, _ = lim.Decide(ctx, "key:k", ratelimittest.Free)
	if _, err := lim.Decide(ctx, "key:k", ratelimittest.Free); petstore.ErrorCode(err) != petstore.CodeUnavailable {
		t.Fatalf("while refusing connections: %v, want unavailable", err)
	}
	if got := store.Calls() - calls; got != 1 {
		t.Fatalf("after the cool-down, %d calls reached the store, want one probe", got)
	}
	if st := lim.Status(); !st.Unreachable || st.Ready() {
		t.Fatalf("while refusing connections: %+v, want unreachable and not ready", st)
	}
	// The store is back: the next probe succeeds and ends the outage.
	store.set("")
	now = now.Add(time.Second)
	d, err := lim.Decide(ctx, "key:k", ratelimittest.Free)
	if err != nil || d.Degraded || !d.Allowed {
		t.Fatalf("probe after recovery: %+v, %v; want a shared decision", d, err)
	}
	if st := lim.Status(); st.Degraded || st.Unreachable || !st.Since.IsZero() || !st.Ready() {
		t.Fatalf("after recovery: %+v, want healthy", st)
	}
	if n := strings.Count(logs.String(), "rate limit store failed"); n != 1 {
		t.Fatalf("logged %d failures for one outage, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "rate limit store recovered"); n != 1 {
		t.Fatalf("logged %d recoveries, want 1:\n%s", n, logs.String())
	}
}

// TestBusyStoreIsNotDown checks that timeouts among successes, as from a
// busy store, never open the breaker.
func TestBusyStoreIsNotDown(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	store := &switchStore{inner: ratelimit.NewMemoryStore()}
	lim := ratelimit.New(store, ratelimit.Config{Clock: func() time.Time { return now }, FailClosed: true, StoreTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	for i := range 40 {
		store.set("")
		if i%5 != 0 {
			store.set("hang")
		}
		now = now.Add(10 * time.Millisecond) // four timeouts, then a success, within every 50 ms
		if _, err := lim.Decide(ctx, "key:k", ratelimittest.Pro); err != nil {
			t.Fatalf("decision %d: %v, want no refusal from a busy store", i, err)
		}
	}
	if lim.Status().Unreachable {
		t.Fatal("a busy store was taken for down")
	}
}

// TestZeroConfigFailsOpen checks the spec's default: a Limiter built with
// the zero Config admits requests while its store is down.
func TestZeroConfigFailsOpen(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ratelimit.Config
		open bool
	}{
		{"zero value", ratelimit.Config{}, true},
		{"FailClosed", ratelimit.Config{FailClosed: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ratelimit.New(brokenStore{"error"}, tc.cfg).Decide(context.Background(), "ip:127.0.0.1", ratelimittest.Free)
			if tc.open && (err != nil || !d.Allowed || !d.Degraded) {
				t.Fatalf("Decide = %+v, %v; want admitted and degraded", d, err)
			}
			if !tc.open && petstore.ErrorCode(err) != petstore.CodeUnavailable {
				t.Fatalf("Decide error = %v; want unavailable", err)
			}
		})
	}
}

// TestBanReportsEveryWindowEmpty checks the figures of a banned subject:
// every window, not only the binding one, has nothing left until the ban
// ends, so the IETF RateLimit header agrees with Retry-After.
func TestBanReportsEveryWindowEmpty(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }})
	limits := petstore.Limits{PerMinute: 1, PerDay: 100}
	ctx := context.Background()
	var d ratelimit.Decision
	for i := range 1 + 31 { // one admitted, then 31 strikes: banned
		if i == 2 {
			now = now.Add(time.Second) // past the strike grace
		}
		d, _ = lim.Decide(ctx, "key:k", limits)
	}
	if d.Code != petstore.CodeAPIKeyBanned {
		t.Fatalf("after 31 strikes: %+v, want api_key_banned", d)
	}
	banEnd := now.Add(15 * time.Minute)
	for _, at := range []time.Duration{0, 2 * time.Minute} { // also after the minute window would have reset
		now = now.Add(at)
		d, _ = lim.Decide(ctx, "key:k", limits)
		if d.Allowed || d.Code != petstore.CodeAPIKeyBanned {
			t.Fatalf("+%v: %+v, want banned", at, d)
		}
		for _, w := range d.Windows {
			if w.Remaining != 0 || !w.Reset.Equal(banEnd) || w.ResetIn(d.At) != int64(d.RetryAfter/time.Second) {
				t.Fatalf("+%v: window %s = r=%d reset %v (t=%d); want r=0 until the ban's end %v (Retry-After %v)",
					at, w.Name, w.Remaining, w.Reset, w.ResetIn(d.At), banEnd, d.RetryAfter)
			}
		}
		if d.Binding.Remaining != 0 || !d.Binding.Reset.Equal(banEnd) {
			t.Fatalf("+%v: binding %+v, want r=0 until %v", at, d.Binding, banEnd)
		}
	}
}

func TestDegradedClearsWhenStoreRecovers(t *testing.T) {
	lim := ratelimit.New(brokenStore{"error"}, ratelimit.Config{})
	if _, err := lim.Decide(context.Background(), "ip:127.0.0.1", ratelimittest.Free); err != nil || !lim.Degraded() {
		t.Fatalf("err %v degraded %v", err, lim.Degraded())
	}
	lim = ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	if d, err := lim.Decide(context.Background(), "ip:127.0.0.1", ratelimittest.Free); err != nil || d.Degraded || lim.Degraded() {
		t.Fatalf("healthy store: %+v %v degraded %v", d, err, lim.Degraded())
	}
}

func TestDecideRejectsInvalidLimits(t *testing.T) {
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	for _, l := range []petstore.Limits{{}, {PerMinute: 0, PerDay: 10}, {PerMinute: 10, PerDay: 5}} {
		if _, err := lim.Decide(context.Background(), "key:k", l); petstore.ErrorCode(err) != petstore.CodeInternal {
			t.Fatalf("limits %+v: err %v, want internal", l, err)
		}
	}
}

func TestCanceledCallerIsNotAStoreFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	if _, err := lim.Decide(ctx, "key:k", ratelimittest.Free); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if lim.Degraded() || lim.Failures() != 0 {
		t.Fatal("a canceled caller counted as a store failure")
	}
}

// TestBinding checks which window the X-RateLimit-* headers report.
func TestBinding(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name     string
		limits   petstore.Limits
		requests int
		want     string
		quota    int64
		left     int64
	}{
		{"fresh Free key: the minute", ratelimittest.Free, 1, "minute", 60, 59},
		{"tie: the shorter window", petstore.Limits{PerMinute: 5, PerDay: 5}, 2, "minute", 5, 3},
		{"day has fewer left, a minute later", petstore.Limits{PerMinute: 10, PerDay: 15}, 11, "day", 15, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: clock})
			var d ratelimit.Decision
			for i := range tc.requests {
				if i == 10 {
					now = now.Add(time.Minute)
				}
				var err error
				if d, err = lim.Decide(context.Background(), "key:b", tc.limits); err != nil {
					t.Fatal(err)
				}
			}
			if d.Binding.Name != tc.want || d.Binding.Quota != tc.quota || d.Binding.Remaining != tc.left {
				t.Fatalf("binding = %+v, want %s %d/%d", d.Binding, tc.want, tc.left, tc.quota)
			}
		})
	}
}

func TestWindowSeconds(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		reset      time.Time
		unix, secs int64
	}{
		{time.Unix(1060, 0), 1060, 60},
		{time.Unix(1060, 1), 1061, 61},
		{time.Unix(999, 0), 999, 0},
	}
	for _, tc := range tests {
		t.Run(tc.reset.String(), func(t *testing.T) {
			w := ratelimit.Window{Reset: tc.reset}
			if got := w.ResetUnix(); got != tc.unix {
				t.Fatalf("ResetUnix = %d, want %d", got, tc.unix)
			}
			if got := w.ResetIn(now); got != tc.secs {
				t.Fatalf("ResetIn = %d, want %d", got, tc.secs)
			}
		})
	}
}

func TestBanLength(t *testing.T) {
	p := ratelimit.DefaultBanPolicy()
	for level, want := range map[int64]time.Duration{1: 15 * time.Minute, 2: 30 * time.Minute, 3: time.Hour, 7: 16 * time.Hour, 8: 24 * time.Hour, 100: 24 * time.Hour} {
		if got := p.BanLength(level); got != want {
			t.Errorf("BanLength(%d) = %v, want %v", level, got, want)
		}
	}
}

// FuzzMemoryStore drives one subject through arbitrary sequences of
// requests and clock steps and checks that no window ever admits more than
// its quota and that refusals come with a Retry-After.
func FuzzMemoryStore(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 200, 255, 1, 2, 3}, int64(3), int64(5))
	f.Add([]byte{255, 255, 255}, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, steps []byte, perMinute, perDay int64) {
		limits := petstore.Limits{PerMinute: 1 + abs(perMinute)%20, PerDay: 0}
		limits.PerDay = limits.PerMinute + abs(perDay)%50
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }})
		var admitted []time.Time
		for _, s := range steps {
			// Steps below 200 send a request; above, they move the clock.
			if s >= 200 {
				now = now.Add(time.Duration(s-199) * 7 * time.Second)
				continue
			}
			d, err := lim.Decide(context.Background(), "key:f", limits)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				if d.RetryAfter < time.Second {
					t.Fatalf("refused with RetryAfter %v", d.RetryAfter)
				}
				continue
			}
			admitted = append(admitted, now)
			// Fixed windows never hold more than the quota, so no
			// sliding minute can hold more than twice the quota.
			n := 0
			for _, a := range admitted {
				if now.Sub(a) < time.Minute {
					n++
				}
			}
			if int64(n) > 2*limits.PerMinute {
				t.Fatalf("%d admitted within a minute, quota %d", n, limits.PerMinute)
			}
			if d.Binding.Remaining < 0 || d.Binding.Remaining >= d.Binding.Quota {
				t.Fatalf("binding after an admission: %+v", d.Binding)
			}
		}
		if int64(len(admitted)) > limits.PerDay*(1+int64(now.Sub(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))/(24*time.Hour))) {
			t.Fatalf("admitted %d, day quota %d", len(admitted), limits.PerDay)
		}
	})
}

func abs(n int64) int64 {
	if n < 0 {
		return -(n + 1) // never overflows
	}
	return n
}

// TestStrikeGrace checks the rule that keeps a burst from banning: the
// refusals within BanPolicy.Grace after the first count as no strikes, so
// 31 refusals at one instant are one strike; with no grace they ban.
func TestStrikeGrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy ratelimit.BanPolicy
		want   string
	}{
		{"default grace", ratelimit.BanPolicy{}, petstore.CodeRateLimited},
		{"no grace", ratelimit.BanPolicy{Grace: -1}, petstore.CodeAPIKeyBanned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }, BanPolicy: tc.policy})
			var d ratelimit.Decision
			for range 60 + 31 {
				d, _ = lim.Decide(context.Background(), "key:burst", ratelimittest.Free)
			}
			if d.Code != tc.want {
				t.Fatalf("91st request at one instant: %q, want %q", d.Code, tc.want)
			}
		})
	}
}

// TestEveryOutageIsLogged: a second outage within LogInterval of the first
// is logged when it starts, and so is each recovery.
func TestEveryOutageIsLogged(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	store := &switchStore{inner: ratelimit.NewMemoryStore()}
	lim := ratelimit.New(store, ratelimit.Config{Clock: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), LogInterval: time.Hour})
	for range 2 {
		store.set("error")
		for range 3 {
			_, _ = lim.Decide(context.Background(), "key:k", ratelimittest.Free)
		}
		now = now.Add(time.Second)
		store.set("")
		if _, err := lim.Decide(context.Background(), "key:k", ratelimittest.Free); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	if f, r := strings.Count(logs.String(), "rate limit store failed"), strings.Count(logs.String(), "rate limit store recovered"); f != 2 || r != 2 {
		t.Fatalf("two outages within a minute: %d failure and %d recovery lines, want 2 and 2:\n%s", f, r, logs.String())
	}
}

// Estimate reports a subject's windows as a decision would, spending
// nothing; a Decide that ends without a decision (here its context) comes
// with those figures, for the answer's headers.
func TestEstimateSpendsNothing(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }})
	free := petstore.Limits{PerMinute: 60, PerDay: 1000}
	for range 3 {
		if _, err := l.Decide(context.Background(), "key:k", free); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := l.Decide(ctx, "key:k", free)
	if err == nil || d.Allowed {
		t.Fatalf("canceled Decide: %+v, %v; want an error and not allowed", d, err)
	}
	for _, d := range []ratelimit.Decision{d, l.Estimate("key:k", free), l.Estimate("key:k", free)} {
		if d.Binding.Quota != 60 || d.Binding.Remaining != 57 || !d.Binding.Reset.Equal(now.Add(time.Minute)) {
			t.Fatalf("estimate after 3 requests: %+v, want 57 of 60 left until %v", d.Binding, now.Add(time.Minute))
		}
	}
	if got := l.Estimate("key:other", free).Binding; got.Remaining != 60 {
		t.Fatalf("estimate of a subject never seen: %+v, want 60 left", got)
	}
	if d, _ := l.Decide(context.Background(), "key:k", free); d.Binding.Remaining != 56 {
		t.Fatalf("next decision: %d left, want 56: an estimate spent something", d.Binding.Remaining)
	}
}
