package redislimit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// TestSlowLinkWithinTheBudgetStaysUp: a link whose round trip (360 ms) is
// well within the 1 s store timeout keeps Redis up, though concurrent
// requests need connections the pool does not hold yet: a fresh
// connection costs HELLO and the call, two round trips, so every request
// is decided by Redis's shared count, none by the local fallback.
func TestSlowLinkWithinTheBudgetStaysUp(t *testing.T) {
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	p := newProxy(t)
	lim := ratelimit.New(redislimit.New(proxied(t, p), prefix), ratelimit.Config{}) // the default 1 s timeout
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	limits := petstore.Limits{PerMinute: 100, PerDay: 1000}
	if d, err := lim.Decide(ctx, "key:fast", limits); err != nil || !d.Allowed || d.Degraded {
		t.Fatalf("before the link slows: %+v, %v", d, err)
	}
	p.SetLatency(180 * time.Millisecond) // a 360 ms round trip
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 8 { // a new key each: each asks Redis, on a connection of its own
			wg.Go(func() {
				d, err := lim.Decide(ctx, fmt.Sprintf("key:slow-%d-%d", round, i), limits)
				if err != nil || !d.Allowed || d.Degraded {
					t.Errorf("round %d, request %d over a 360 ms round trip: %+v, %v; want admitted by Redis", round, i, d, err)
				}
			})
		}
		wg.Wait()
	}
	if st := lim.Status(); st.Degraded || st.Failures > 0 {
		t.Fatalf("over a 360 ms round trip: %+v; want Redis up, no failure", st)
	}
}
