package ratelimittest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/petstorekit/petstore/ratelimit"
)

// CheckSharedQuota sends 640 requests for one Free-plan subject from 32
// goroutines spread over limiters (separate limiters over one shared store,
// as separate processes would have them) and fails unless exactly the
// minute's 60 are admitted in total: the quota is shared, not multiplied.
func CheckSharedQuota(t *testing.T, limiters ...*ratelimit.Limiter) {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		lim := limiters[i%len(limiters)]
		wg.Go(func() {
			for range 20 {
				d, err := lim.Decide(context.Background(), "key:shared", Free)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got, want := admitted.Load(), Free.PerMinute; got != want {
		t.Fatalf("%d limiters sharing one store admitted %d, want exactly %d", len(limiters), got, want)
	}
}
