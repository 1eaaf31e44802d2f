package limiterstore_test

import (
	"context"
	"testing"

	"github.com/ulule/limiter/v3/drivers/store/memory"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/limiterstore"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// BenchmarkDecideOverUluleMemory is a whole decision over ulule's memory
// store: a ban Peek and one Get per window.
func BenchmarkDecideOverUluleMemory(b *testing.B) {
	lim := ratelimit.New(limiterstore.New(memory.NewStore()), ratelimit.Config{})
	limits := petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 41}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, "key:bench", limits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideOverUluleRedis is a whole decision over ulule's Redis
// store: three round trips (ban, minute, day).
func BenchmarkDecideOverUluleRedis(b *testing.B) {
	var count testenv.CommandCounter
	c := testenv.RedisClient(b)
	c.AddHook(&count)
	lim := ratelimit.New(limiterstore.New(newUluleRedis(b, c, testenv.RedisPrefix(b, c, "ulule"))), ratelimit.Config{})
	limits := petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 41}
	ctx := context.Background()
	before := count.Count()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, "key:bench", limits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(count.Count()-before)/float64(b.N), "roundtrips/op")
}
