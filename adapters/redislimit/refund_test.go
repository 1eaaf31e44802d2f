package redislimit_test

import (
	"context"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// A request the server could not serve spends no quota with leased shares
// either: the refunded unit goes back into the process's share, so a
// spent key admits one more request after a refund, and only one.
func TestRefundGoesBackIntoTheShare(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	// The ban poll reads the clock too: a clock safe for concurrent use.
	clk := testenv.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := ratelimit.New(redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock()),
		ratelimit.Config{Clock: clk.Now, StoreTimeout: 5 * time.Second})
	defer l.Close(context.Background())
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	var last time.Time // when the last admitted request was admitted
	admitted := func() bool {
		t.Helper()
		d, err := l.Decide(ctx, "key:refund", limits)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			last = d.At
		}
		return d.Allowed
	}
	for i := range 5 {
		if !admitted() {
			t.Fatalf("request %d of a 5/min key refused", i+1)
		}
	}
	if admitted() {
		t.Fatal("a sixth request in the minute was admitted")
	}
	if err := l.Refund(ctx, "key:refund", limits, last); err != nil {
		t.Fatal(err)
	}
	if !admitted() {
		t.Fatal("after a refund the spent key still refuses")
	}
	if admitted() {
		t.Fatal("one refund admitted two more requests")
	}

	// A request of the last minute refunded once the next has begun
	// must not let the new minute admit a sixth.
	old := last
	clk.Advance(time.Minute)
	if !admitted() {
		t.Fatal("the first request of a new minute was refused")
	}
	if err := l.Refund(ctx, "key:refund", limits, old); err != nil {
		t.Fatal(err)
	}
	n := 1
	for admitted() {
		n++
	}
	if n != 5 {
		t.Fatalf("the new minute admitted %d after a refund of the last one's request, want its quota of 5", n)
	}
}

// A request refunded after its minute ended gives its unit back to the
// day it was admitted in, which still runs, as the in-memory store does.
func TestRefundAfterTheMinuteGoesBackToTheDay(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	store := redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testenv.NewClock(t0)
	l := ratelimit.New(store, ratelimit.Config{Clock: clk.Now, StoreTimeout: 5 * time.Second})
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	d, err := l.Decide(ctx, "key:late", limits)
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	clk.Set(t0.Add(61 * time.Second))
	if err := l.Refund(ctx, "key:late", limits, d.At); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil { // gives back what the process holds
		t.Fatal(err)
	}
	ws, err := store.Usage(ctx, "key:late", ratelimit.Rates(limits), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ws[1].Remaining != 100 {
		t.Fatalf("the day has %d of 100 left after the refund of its only request", ws[1].Remaining)
	}
}

// A refund into the share of a spent key makes the key one this process
// admits, and says so: Refusing (which paces a refused client's key
// lookups) is false and Estimate allows, as Decide then does.
func TestRefundedShareIsNotRefusing(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	clk := testenv.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := ratelimit.New(redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock()),
		ratelimit.Config{Clock: clk.Now, StoreTimeout: 5 * time.Second})
	defer l.Close(context.Background())
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	var last ratelimit.Decision
	for i := range 5 {
		d, err := l.Decide(ctx, "ip:192.0.2.7", limits)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d of a 5/min address: %+v, %v", i+1, d, err)
		}
		last = d
	}
	if !l.Refusing("ip:192.0.2.7") {
		t.Fatal("a spent minute is not refusing")
	}
	if err := l.Refund(ctx, "ip:192.0.2.7", limits, last.At); err != nil {
		t.Fatal(err)
	}
	if l.Refusing("ip:192.0.2.7") {
		t.Error("Refusing after a refund put a unit back into the share")
	}
	if d := l.Estimate("ip:192.0.2.7", limits); !d.Allowed || d.Binding.Remaining != 1 {
		t.Errorf("Estimate after the refund: %+v, want allowed with 1 remaining", d)
	}
	if d, err := l.Decide(ctx, "ip:192.0.2.7", limits); err != nil || !d.Allowed {
		t.Fatalf("after the refund: %+v, %v; want admitted", d, err)
	}
}
