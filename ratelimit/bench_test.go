package ratelimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// Enterprise-sized limits, so the benchmark measures admissions, not
// refusals.
var benchLimits = petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 41}

// BenchmarkDecideMemory is a whole decision on the own store: the ban check
// and both windows, with the Decision built.
func BenchmarkDecideMemory(b *testing.B) {
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, "key:bench", benchLimits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideMemoryParallel spreads 1,024 subjects over all cores.
func BenchmarkDecideMemoryParallel(b *testing.B) {
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	subjects := make([]string, 1024)
	for i := range subjects {
		subjects[i] = "key:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := lim.Decide(context.Background(), subjects[i%1024], benchLimits); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkUluleMemoryGet is the yardstick: one bare ulule memory-store
// Get, a single window with no ban check.
func BenchmarkUluleMemoryGet(b *testing.B) {
	st := memory.NewStore()
	rate := limiter.Rate{Limit: 1 << 40, Period: time.Minute}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Get(ctx, "key:bench", rate); err != nil {
			b.Fatal(err)
		}
	}
}

// An admitted in-memory decision allocates only its Decision's windows:
// the request's rates and the store's counts stay on the stack, so the
// hot path hands the collector one small object per request.
func TestDecideInMemoryAllocatesOnlyTheDecisionsWindows(t *testing.T) {
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	ctx := context.Background()
	if _, err := lim.Decide(ctx, "key:allocs", benchLimits); err != nil { // the subject's entry is made once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := lim.Decide(ctx, "key:allocs", benchLimits); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("an in-memory decision made %v allocations, want 1 (Decision.Windows)", allocs)
	}
}
