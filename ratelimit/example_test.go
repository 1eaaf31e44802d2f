package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

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
