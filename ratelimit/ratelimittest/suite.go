// Package ratelimittest is the conformance suite every ratelimit.Store
// runs: the in-memory store, the adapter over ulule/limiter stores and the
// native Redis adapter. It drives a ratelimit.Limiter over the store, so it
// checks what a client sees (admissions, the windows' figures, Retry-After,
// bans), with a controlled clock wherever the store lets the clock be
// controlled.
package ratelimittest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// Harness describes a store to the suite.
type Harness struct {
	// NewStore returns a fresh, empty store; the suite calls it once per
	// test, inside the bubble when Bubble is set. Stores on a shared server
	// should use a fresh key prefix and delete their keys in t.Cleanup.
	NewStore func(t testing.TB) ratelimit.Store

	// WallClock says the store reads the wall clock itself instead of
	// Request.Now (ulule/limiter's stores do). The suite then uses
	// time.Now as the limiter's clock and travels in time with time.Sleep,
	// which is only instant inside a testing/synctest bubble: without
	// Bubble, the tests that need time travel are skipped.
	WallClock bool

	// Bubble, when set, runs each test in its own fake-time bubble,
	// typically synctest.Test.
	Bubble func(t *testing.T, f func(t *testing.T))
}

// Run runs the suite on stores that take their time from Request.Now.
func Run(t *testing.T, newStore func(t testing.TB) ratelimit.Store) {
	RunHarness(t, Harness{NewStore: newStore})
}

// Free are the Free plan's limits: 60 a minute, 1,000 a day.
var Free = petstore.Limits{PerMinute: 60, PerDay: 1000}

// Pro are the Pro plan's limits: 300 a minute, 10,000 a day.
var Pro = petstore.Limits{PerMinute: 300, PerDay: 10000}

// env is one test's world: a limiter over a fresh store and a clock.
type env struct {
	t      *testing.T
	store  ratelimit.Store
	lim    *ratelimit.Limiter
	wall   bool
	mu     sync.Mutex
	now    time.Time
	travel bool
}

// Now is the limiter's clock.
func (e *env) Now() time.Time {
	if e.wall {
		return time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// advance moves the clock forward by d.
func (e *env) advance(d time.Duration) {
	if e.wall {
		time.Sleep(d)
		return
	}
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

func (e *env) decide(subject string, limits petstore.Limits) ratelimit.Decision {
	e.t.Helper()
	d, err := e.lim.Decide(context.Background(), subject, limits)
	if err != nil {
		e.t.Fatalf("Decide(%q): %v", subject, err)
	}
	if d.Degraded {
		e.t.Fatalf("Decide(%q) degraded: the store failed", subject)
	}
	return d
}

// needsTravel skips a test that must move the clock when the store's clock
// cannot be moved.
func (e *env) needsTravel() {
	e.t.Helper()
	if !e.travel {
		e.t.Skip("store reads the wall clock and no fake-time bubble is configured; this test needs time travel")
	}
}

// subject returns a subject no other test uses, so tests may share a server.
func subject() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "key:test-" + hex.EncodeToString(b)
}

// RunHarness runs the suite on the store h describes.
func RunHarness(t *testing.T, h Harness) {
	tests := []struct {
		name string
		f    func(e *env)
	}{
		{"FreshSubject", testFresh},
		{"ExactUnderConcurrency", testConcurrency},
		{"MinuteRefusalsCostNoDayQuota", testMinuteRefusalsFree},
		{"MinuteWindowResets", testMinuteResets},
		{"DayWindowExhausts", testDayExhausts},
		{"RetryAfterWhenBothWindowsAreFull", testBothFull},
		{"PlanChangeAppliesNextRequest", testPlanChange},
		{"PlanDowngradeAppliesNextRequest", testPlanDowngrade},
		{"SubjectsAreIndependent", testIndependent},
		{"StrikesBan", testStrikesBan},
		{"BanDoesNotExtendItself", testBanNotExtended},
		{"BanLiftsOnTime", testBanLifts},
		{"SecondBanLastsTwiceAsLong", testSecondBan},
		{"RetryAfterHonouringClientIsNeverBanned", testHonouringClient},
		{"BurstBeforeAnyAnswerIsNotBanned", testBurstNotBanned},
		{"CanceledContext", testCanceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := func(t *testing.T) {
				e := &env{t: t, wall: h.WallClock, travel: !h.WallClock || h.Bubble != nil,
					now: time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)}
				e.store = h.NewStore(t)
				e.lim = ratelimit.New(e.store, ratelimit.Config{Clock: e.Now, StoreTimeout: 5 * time.Second})
				tc.f(e)
			}
			if h.Bubble != nil {
				h.Bubble(t, body)
				return
			}
			body(t)
		})
	}
}

// checkWindow checks a window's figures. Reset may be up to a second late,
// never early: stores built on ulule report it in whole seconds, rounded up.
func checkWindow(t *testing.T, what string, w ratelimit.Window, name string, quota, remaining int64, reset time.Time) {
	t.Helper()
	checkWindowBetween(t, what, w, name, quota, remaining, reset, reset)
}

// checkWindowBetween is checkWindow for a store on the wall clock, whose
// window starts somewhere in the call: Reset is from earliest on, and up
// to a second after latest.
func checkWindowBetween(t *testing.T, what string, w ratelimit.Window, name string, quota, remaining int64, earliest, latest time.Time) {
	t.Helper()
	if w.Name != name || w.Quota != quota || w.Remaining != remaining {
		t.Fatalf("%s = %s quota %d remaining %d, want %s quota %d remaining %d", what, w.Name, w.Quota, w.Remaining, name, quota, remaining)
	}
	if w.Reset.Before(earliest) || w.Reset.After(latest.Add(time.Second)) {
		t.Fatalf("%s reset = %v, want %v to %v (or up to 1 s later)", what, w.Reset, earliest, latest)
	}
}

func testFresh(e *env) {
	t := e.t
	start := e.Now()
	d := e.decide(subject(), Free)
	end := e.Now() // the same as start unless the store reads the wall clock
	if !d.Allowed || d.Code != "" || d.RetryAfter != 0 {
		t.Fatalf("first request: allowed %v code %q retry %v, want admitted", d.Allowed, d.Code, d.RetryAfter)
	}
	if len(d.Windows) != 2 {
		t.Fatalf("got %d windows, want 2", len(d.Windows))
	}
	checkWindowBetween(t, "binding", d.Binding, "minute", 60, 59, start.Add(time.Minute), end.Add(time.Minute))
	checkWindowBetween(t, "minute", d.Windows[0], "minute", 60, 59, start.Add(time.Minute), end.Add(time.Minute))
	checkWindowBetween(t, "day", d.Windows[1], "day", 1000, 999, start.Add(24*time.Hour), end.Add(24*time.Hour))
	if d.Windows[0].Length != time.Minute || d.Windows[1].Length != 24*time.Hour {
		t.Fatalf("lengths = %v, %v", d.Windows[0].Length, d.Windows[1].Length)
	}
}

func testConcurrency(e *env) {
	t := e.t
	sub := subject()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 20 {
				d, err := e.lim.Decide(context.Background(), sub, Free)
				if err != nil || d.Degraded {
					t.Errorf("Decide: %v (degraded %v)", err, d.Degraded)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got, want := admitted.Load(), int64(60); got != want {
		t.Fatalf("admitted %d of 1280 concurrent requests, want exactly %d", got, want)
	}
	d := e.decide(sub, Free)
	if d.Allowed {
		t.Fatal("request after the burst admitted")
	}
	// With a wall clock the burst may outlast the strike grace and end in
	// a ban, whose Decision reports every window empty, so the counts are
	// read from the store, which returns the windows as they are.
	res, err := e.store.Take(context.Background(), ratelimit.Request{Subject: sub, Rates: ratelimit.Rates(Free), Now: e.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed || len(res.Windows) != 2 {
		t.Fatalf("store after the burst: %+v, want refused with 2 windows", res)
	}
	if got, want := res.Windows[1].Used, int64(60); got != want {
		t.Fatalf("day used = %d, want exactly %d counted", got, want)
	}
	if got, want := res.Windows[0].Used, int64(60); got != want {
		t.Fatalf("minute used = %d, want %d", got, want)
	}
}

// exhaustMinute sends limits.PerMinute admitted requests and fails if any
// is refused.
func exhaustMinute(e *env, sub string, limits petstore.Limits) ratelimit.Decision {
	e.t.Helper()
	var d ratelimit.Decision
	for i := range limits.PerMinute {
		d = e.decide(sub, limits)
		if !d.Allowed {
			e.t.Fatalf("request %d refused (%s), want admitted", i+1, d.Code)
		}
	}
	return d
}

func testMinuteRefusalsFree(e *env) {
	t := e.t
	sub := subject()
	exhaustMinute(e, sub, Free)
	for i := range 20 {
		d := e.decide(sub, Free)
		if d.Allowed || d.Code != petstore.CodeRateLimited {
			t.Fatalf("refusal %d: allowed %v code %q, want rate_limited", i+1, d.Allowed, d.Code)
		}
		if d.Binding.Name != "minute" || d.Binding.Remaining != 0 || d.Binding.Quota != 60 {
			t.Fatalf("refusal binds %+v, want the minute window with 0 remaining", d.Binding)
		}
		if got, want := d.Windows[1].Remaining, int64(940); got != want {
			t.Fatalf("refusal %d: day remaining = %d, want %d: minute refusals must not burn day quota", i+1, got, want)
		}
	}
}

func testMinuteResets(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	start := e.Now()
	exhaustMinute(e, sub, Free)
	d := e.decide(sub, Free)
	if d.Allowed {
		t.Fatal("61st request admitted")
	}
	if d.RetryAfter < time.Second || d.RetryAfter > 61*time.Second || d.RetryAfter%time.Second != 0 {
		t.Fatalf("RetryAfter = %v, want whole seconds in [1 s, 61 s]", d.RetryAfter)
	}
	if back := d.At.Add(d.RetryAfter); back.Before(start.Add(time.Minute)) {
		t.Fatalf("RetryAfter sends the client back at %v, before the window ends at %v", back, start.Add(time.Minute))
	}
	e.advance(d.RetryAfter)
	d = e.decide(sub, Free)
	if !d.Allowed {
		t.Fatalf("after Retry-After: refused (%s), want admitted in a new minute", d.Code)
	}
	checkWindow(t, "minute", d.Windows[0], "minute", 60, 59, e.Now().Add(time.Minute))
	if got, want := d.Windows[1].Remaining, int64(939); got != want {
		t.Fatalf("day remaining = %d, want %d", got, want)
	}
}

func testDayExhausts(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	start := e.Now()
	// 20 bursts of 50, a minute and a second apart: 1,000 requests over
	// 20 minutes, each admitted.
	for burst := range 20 {
		for i := range 50 {
			if d := e.decide(sub, Free); !d.Allowed {
				t.Fatalf("burst %d request %d refused (%s)", burst, i, d.Code)
			}
		}
		e.advance(61 * time.Second)
	}
	d := e.decide(sub, Free)
	if d.Allowed || d.Code != petstore.CodeRateLimited {
		t.Fatalf("1,001st request: allowed %v code %q, want rate_limited", d.Allowed, d.Code)
	}
	checkWindow(t, "binding", d.Binding, "day", 1000, 0, start.Add(24*time.Hour))
	if d.RetryAfter < 23*time.Hour || d.RetryAfter > 24*time.Hour {
		t.Fatalf("RetryAfter = %v, want day-sized (the day window ends in about 23 h 40 min)", d.RetryAfter)
	}
	if d.Windows[0].Remaining != 60 {
		t.Fatalf("minute remaining = %d, want 60: a day refusal costs no minute quota", d.Windows[0].Remaining)
	}
	e.advance(d.RetryAfter)
	d = e.decide(sub, Free)
	if !d.Allowed || d.Windows[1].Remaining != 999 {
		t.Fatalf("after the day: allowed %v day remaining %d, want admitted with 999", d.Allowed, d.Windows[1].Remaining)
	}
}

func testPlanChange(e *env) {
	t := e.t
	sub := subject()
	exhaustMinute(e, sub, Free)
	if d := e.decide(sub, Free); d.Allowed {
		t.Fatal("61st Free request admitted")
	}
	d := e.decide(sub, Pro)
	if !d.Allowed {
		t.Fatalf("first request after upgrade to Pro refused (%s)", d.Code)
	}
	if d.Binding.Quota != 300 || d.Binding.Remaining != 239 {
		t.Fatalf("binding = %+v, want Pro minute quota 300 with 239 remaining", d.Binding)
	}
}

// testPlanDowngrade checks that a downgrade applies from the next request
// too: a key that already used more than its new plan's minute is refused
// at once, whatever share of the old plan's quota a process holds.
func testPlanDowngrade(e *env) {
	t := e.t
	sub := subject()
	business := petstore.Limits{PerMinute: 1000, PerDay: 100_000}
	for i := range 100 {
		if d := e.decide(sub, business); !d.Allowed {
			t.Fatalf("Business request %d refused (%s)", i+1, d.Code)
		}
	}
	d := e.decide(sub, Free)
	if d.Allowed || d.Code != petstore.CodeRateLimited {
		t.Fatalf("first request after a downgrade to Free, 100 used: allowed %v code %q, want rate_limited", d.Allowed, d.Code)
	}
	if d.Binding.Quota != 60 || d.Binding.Remaining != 0 {
		t.Fatalf("binding = %+v, want the Free minute with 0 remaining", d.Binding)
	}
	// What was leased under Business and not used is given back, not
	// counted: the day has spent the 100 admitted requests only.
	if got := d.Windows[1].Remaining; got != 900 {
		t.Fatalf("day remaining = %d, want 900", got)
	}
}

func testIndependent(e *env) {
	t := e.t
	a, b := subject(), subject()
	exhaustMinute(e, a, Free)
	if d := e.decide(a, Free); d.Allowed {
		t.Fatal("61st request admitted")
	}
	if d := e.decide(b, Free); !d.Allowed || d.Binding.Remaining != 59 {
		t.Fatalf("other subject: allowed %v remaining %d, want admitted with 59", d.Allowed, d.Binding.Remaining)
	}
}

// strikeOut exhausts the minute and sends 31 refused requests, the second
// one past the strike grace after the first; it returns the 31st refusal,
// which must be the ban.
func strikeOut(e *env, sub string) ratelimit.Decision {
	e.t.Helper()
	exhaustMinute(e, sub, Free)
	for i := range 30 {
		if i == 1 {
			e.advance(ratelimit.DefaultBanPolicy().Grace)
		}
		if d := e.decide(sub, Free); d.Allowed || d.Code != petstore.CodeRateLimited {
			e.t.Fatalf("strike %d: allowed %v code %q, want rate_limited", i+1, d.Allowed, d.Code)
		}
	}
	d := e.decide(sub, Free)
	if d.Allowed || d.Code != petstore.CodeAPIKeyBanned {
		e.t.Fatalf("strike 31: allowed %v code %q, want api_key_banned", d.Allowed, d.Code)
	}
	return d
}

// checkBan checks a banned decision for a ban of length n that began at
// about the decision's instant.
func checkBan(t *testing.T, d ratelimit.Decision, n time.Duration) {
	t.Helper()
	if d.Binding.Remaining != 0 {
		t.Fatalf("banned binding remaining = %d, want 0", d.Binding.Remaining)
	}
	if d.RetryAfter < n-time.Second || d.RetryAfter > n {
		t.Fatalf("ban RetryAfter = %v, want %v", d.RetryAfter, n)
	}
	if end := d.At.Add(d.RetryAfter); end.Before(d.Binding.Reset) {
		t.Fatalf("RetryAfter ends at %v, before the ban ends at %v", end, d.Binding.Reset)
	}
}

func testStrikesBan(e *env) {
	d := strikeOut(e, subject())
	checkBan(e.t, d, 15*time.Minute)
}

func testBanNotExtended(e *env) {
	t := e.t
	sub := subject()
	end := strikeOut(e, sub).Binding.Reset
	for i := range 100 {
		d := e.decide(sub, Free)
		if d.Allowed || d.Code != petstore.CodeAPIKeyBanned {
			t.Fatalf("request %d during the ban: allowed %v code %q", i+1, d.Allowed, d.Code)
		}
		if !d.Binding.Reset.Equal(end) {
			t.Fatalf("request %d moved the ban's end from %v to %v", i+1, end, d.Binding.Reset)
		}
		if e.travel && i%10 == 9 {
			e.advance(time.Minute) // across strike windows too
		}
	}
}

func testBanLifts(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	end := strikeOut(e, sub).Binding.Reset
	e.advance(end.Sub(e.Now()) - time.Second)
	d := e.decide(sub, Free)
	if d.Code != petstore.CodeAPIKeyBanned || d.RetryAfter != time.Second {
		t.Fatalf("a second before the end: code %q retry %v, want banned, retry 1 s", d.Code, d.RetryAfter)
	}
	e.advance(d.RetryAfter)
	if d := e.decide(sub, Free); !d.Allowed {
		t.Fatalf("after the ban's Retry-After: refused (%s), want admitted", d.Code)
	}
}

func testSecondBan(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	d := strikeOut(e, sub)
	checkBan(t, d, 15*time.Minute)
	e.advance(d.RetryAfter)
	d = strikeOut(e, sub)
	checkBan(t, d, 30*time.Minute)
	e.advance(d.RetryAfter)
	d = strikeOut(e, sub)
	checkBan(t, d, time.Hour)
	// A day and more without a ban: the next one is back to 15 minutes.
	e.advance(d.RetryAfter + 25*time.Hour)
	d = strikeOut(e, sub)
	checkBan(t, d, 15*time.Minute)
}

func testHonouringClient(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	end := e.Now().Add(26 * time.Hour)
	var admitted, refused int
	for e.Now().Before(end) {
		d := e.decide(sub, Free)
		switch {
		case d.Code == petstore.CodeAPIKeyBanned:
			t.Fatalf("client honouring Retry-After banned after %d admitted, %d refused", admitted, refused)
		case d.Allowed:
			admitted++
			e.advance(100 * time.Millisecond)
		default:
			refused++
			e.advance(d.RetryAfter)
		}
	}
	if admitted < 2000 {
		t.Fatalf("admitted %d over 26 h, want at least 2,000 (two days' quota)", admitted)
	}
}

// testBurstNotBanned sends 91 requests at once, as a client does that
// sends them all before any answer arrives: 60 are admitted, 31 refused,
// and none banned, since none could have seen a 429. The client then waits
// the longest Retry-After it got and is admitted.
func testBurstNotBanned(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	var mu sync.Mutex
	var admitted, refused int
	var wait time.Duration
	var wg sync.WaitGroup
	for range 91 {
		wg.Go(func() {
			d, err := e.lim.Decide(context.Background(), sub, Free)
			if err != nil || d.Degraded {
				t.Errorf("Decide: %v (degraded %v)", err, d.Degraded)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case d.Allowed:
				admitted++
			case d.Code == petstore.CodeRateLimited:
				refused++
				wait = max(wait, d.RetryAfter)
			default:
				t.Errorf("burst request refused with %q, want rate_limited: a burst sent before any answer is no reason to ban", d.Code)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if admitted != 60 || refused != 31 {
		t.Fatalf("burst of 91: %d admitted, %d refused; want 60 and 31", admitted, refused)
	}
	e.advance(wait)
	if d := e.decide(sub, Free); !d.Allowed {
		t.Fatalf("after waiting Retry-After (%v): refused with %q, want admitted", wait, d.Code)
	}
}

func testCanceled(e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.store.Take(ctx, ratelimit.Request{Subject: subject(), Rates: ratelimit.Rates(Free), Now: e.Now(), Ban: ratelimit.DefaultBanPolicy()})
	if err == nil {
		e.t.Fatal("Take with a canceled context succeeded, want an error")
	}
}

// testBothFull fills the minute and the day together: Retry-After and the
// binding window name the day's end, when a request is really admitted,
// not the minute's, after which the next request would be refused again.
func testBothFull(e *env) {
	e.needsTravel()
	t := e.t
	sub := subject()
	tiny := petstore.Limits{PerMinute: 2, PerDay: 4}
	start := e.Now()
	for i := range 4 {
		if i == 2 {
			e.advance(time.Minute + time.Second) // ulule's windows end a tick late
		}
		if d := e.decide(sub, tiny); !d.Allowed {
			t.Fatalf("request %d refused (%s), want admitted", i+1, d.Code)
		}
	}
	d := e.decide(sub, tiny)
	if d.Allowed || d.Code != petstore.CodeRateLimited {
		t.Fatalf("fifth request: allowed %v code %q, want rate_limited", d.Allowed, d.Code)
	}
	dayEnd := start.Add(24 * time.Hour)
	if d.Binding.Name != "day" || d.RetryAfter < dayEnd.Sub(e.Now())-time.Second {
		t.Fatalf("both windows full: binding %s, Retry-After %v; want the day, about %v", d.Binding.Name, d.RetryAfter, dayEnd.Sub(e.Now()))
	}
	e.advance(d.RetryAfter)
	if d := e.decide(sub, tiny); !d.Allowed {
		t.Fatalf("after Retry-After: refused (%s), want admitted", d.Code)
	}
}
