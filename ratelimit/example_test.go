package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// New takes the store that keeps the counters and a Config whose zero
// value is the spec's policy; here a stricter ban policy, and a fixed
// clock so that the output does not change: a key that keeps sending
// after its 429s is banned.
func ExampleNew() {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{
		Clock:     func() time.Time { return now },
		BanPolicy: ratelimit.BanPolicy{Strikes: 2, Grace: -1}, // the rest: DefaultBanPolicy's
	})
	defer lim.Close(context.Background())
	limits := petstore.Limits{PerMinute: 1, PerDay: 100}

	for range 5 {
		d, _ := lim.Decide(context.Background(), "key:k_123", limits)
		fmt.Println(d.Allowed, d.Code, d.RetryAfter)
		now = now.Add(time.Second)
	}
	// Output:
	// true  0s
	// false rate_limited 59s
	// false rate_limited 58s
	// false api_key_banned 15m0s
	// false api_key_banned 14m59s
}

// A Free key's first request, then the 61st within its minute.
func ExampleLimiter_Decide() {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{
		Clock: func() time.Time { return now },
	})
	free, _ := petstore.PlanFree.Limits()

	d, _ := lim.Decide(context.Background(), "key:k_123", free)
	fmt.Println(d.Allowed, d.Binding.Name, d.Binding.Quota, d.Binding.Remaining)
	for _, w := range d.Windows {
		fmt.Printf("%q;r=%d;t=%d\n", w.Name, w.Remaining, w.ResetIn(d.At))
	}

	for range 59 {
		_, _ = lim.Decide(context.Background(), "key:k_123", free)
	}
	now = now.Add(45 * time.Second)
	d, _ = lim.Decide(context.Background(), "key:k_123", free)
	fmt.Println(d.Allowed, d.Code, d.Binding.Name, d.RetryAfter)
	// Output:
	// true minute 60 59
	// "minute";r=59;t=60
	// "day";r=999;t=86400
	// false rate_limited minute 15s
}
