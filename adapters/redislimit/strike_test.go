package redislimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// These tests hold docs/rate-limits.md's ban promises for the refusals a
// process decides in memory and tells Redis later.

// heldLeaser is a Store whose next Lease, once hold is called, waits
// until release: a call in flight for as long as the test needs.
type heldLeaser struct {
	*redislimit.Store
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
	fail    bool // Lease fails as a refused connection does
}

// hold makes the next Lease wait; it returns a channel closed once that
// Lease waits, and the release.
func (h *heldLeaser) hold() (entered <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate, h.entered = make(chan struct{}), make(chan struct{})
	gate := h.gate
	return h.entered, func() { close(gate) }
}

func (h *heldLeaser) Lease(ctx context.Context, req ratelimit.LeaseRequest) (ratelimit.LeaseResult, error) {
	h.mu.Lock()
	gate, entered, fail := h.gate, h.entered, h.fail
	h.gate = nil
	h.mu.Unlock()
	if fail {
		return ratelimit.LeaseResult{}, errors.New("dial tcp: connection refused")
	}
	if gate != nil {
		close(entered)
		<-gate
	}
	return h.Store.Lease(ctx, req)
}

// fill spends subject's minute on the Free plan.
func fill(t *testing.T, lim *ratelimit.Limiter, subject string) {
	t.Helper()
	for range ratelimittest.Free.PerMinute {
		if d, err := lim.Decide(context.Background(), subject, ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatalf("filling the minute: %+v, %v", d, err)
		}
	}
}

// TestBurstThenRetryAfterIsNeverBanned: a burst sent at once into a full
// minute is refused in memory while the call that learns the window is
// full is in flight; told to Redis later, those refusals are still a
// burst within the grace, so the client that then honours Retry-After is
// admitted and never banned.
func TestBurstThenRetryAfterIsNeverBanned(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	st := &heldLeaser{Store: redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())}
	clk := testenv.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	lim := ratelimit.New(st, ratelimit.Config{Clock: clk.Now, BanPoll: time.Hour})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	fill(t, lim, "key:burst")

	clk.Advance(10 * time.Second)
	entered, release := st.hold()
	done := make(chan ratelimit.Decision)
	go func() { d, _ := lim.Decide(ctx, "key:burst", ratelimittest.Free); done <- d }()
	<-entered
	var retry time.Duration
	for range 99 { // the rest of the burst, while the first is asking Redis
		d, err := lim.Decide(ctx, "key:burst", ratelimittest.Free)
		if err != nil || d.Allowed || d.Code != petstore.CodeRateLimited {
			t.Fatalf("burst: %+v, %v", d, err)
		}
		retry = d.RetryAfter
	}
	release()
	if d := <-done; d.Allowed {
		t.Fatalf("the burst's first request into a full minute was admitted: %+v", d)
	}

	clk.Advance(retry) // the client honours Retry-After
	for i := range 2 {
		d, err := lim.Decide(ctx, "key:burst", ratelimittest.Free)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d after Retry-After: %+v, %v; want admitted", i+1, d, err)
		}
		clk.Advance(time.Second)
	}
	if bans, err := st.Bans(ctx, clk.Now()); err != nil || len(bans) > 0 {
		t.Fatalf("bans %v, %v; want none", bans, err)
	}
}

// TestBanStartedByReportedStrikesRefuses: strikes counted in memory while
// Redis was down are told to it when it is back; when they start a ban,
// the request of that call is refused as banned, although its window has
// room, and Redis is not taken for unreachable.
func TestBanStartedByReportedStrikesRefuses(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	st := &heldLeaser{Store: redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testenv.NewClock(t0)
	lim := ratelimit.New(st, ratelimit.Config{Clock: clk.Now, BanPoll: time.Hour})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	fill(t, lim, "key:striker")

	clk.Set(t0.Add(30 * time.Second))
	if d, _ := lim.Decide(ctx, "key:striker", ratelimittest.Free); d.Allowed {
		t.Fatal("request 61 of the minute admitted")
	}
	st.mu.Lock()
	st.fail = true
	st.mu.Unlock()
	for i := range 40 { // a client ignoring its 429s, every 100 ms, while Redis is down
		clk.Set(t0.Add(32*time.Second + time.Duration(i)*100*time.Millisecond))
		if d, _ := lim.Decide(ctx, "key:striker", ratelimittest.Free); d.Allowed {
			t.Fatal("admitted into a full minute while Redis was down")
		}
	}
	st.mu.Lock()
	st.fail = false
	st.mu.Unlock()

	clk.Set(t0.Add(61 * time.Second)) // a new minute, with room
	d, err := lim.Decide(ctx, "key:striker", ratelimittest.Free)
	if err != nil || d.Allowed || d.Code != petstore.CodeAPIKeyBanned || !d.BanStarted {
		t.Fatalf("the call that started the ban: %+v, %v; want refused, api_key_banned, ban started", d, err)
	}
	if s := lim.Status(); s.Unreachable {
		t.Fatalf("status %+v: Redis taken for unreachable", s)
	}
}
