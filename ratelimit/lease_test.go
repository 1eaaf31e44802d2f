package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// deadLeaser is a Leaser whose every call fails as a refused connection.
type deadLeaser struct{ brokenStore }

func (deadLeaser) Lease(ctx context.Context, req ratelimit.LeaseRequest) (ratelimit.LeaseResult, error) {
	time.Sleep(time.Millisecond)
	return ratelimit.LeaseResult{}, errors.New("connection refused")
}
func (deadLeaser) BanEvents(ctx context.Context, since, now time.Time) ([]ratelimit.BanEvent, error) {
	return nil, errors.New("connection refused")
}

// TestDeadLeaserAdmitsTheQuotaOnce: 200 concurrent requests to a shared
// store that refuses every call, with the breaker probing all the while,
// admit the quota once: debts being told to the store still count.
func TestDeadLeaserAdmitsTheQuotaOnce(t *testing.T) {
	for range 20 {
		lim := ratelimit.New(deadLeaser{}, ratelimit.Config{BreakerCooldown: time.Millisecond})
		var n atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				d, err := lim.Decide(context.Background(), "key:x", ratelimittest.Free)
				if err == nil && d.Allowed {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		if n.Load() != 60 {
			t.Fatalf("admitted %d with the store down, want the quota, 60", n.Load())
		}
	}
}
