package redislimit_test

import (
	"context"
	"testing"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// BenchmarkDecide is a whole decision on Redis: one EVALSHA. It reports
// the commands sent per decision next to the time.
func BenchmarkDecide(b *testing.B) {
	var count testenv.CommandCounter
	c := testenv.RedisClient(b)
	c.AddHook(&count)
	lim := ratelimit.New(redislimit.New(c, testenv.RedisPrefix(b, c, "rl")), ratelimit.Config{})
	limits := petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 41}
	ctx := context.Background()
	_, _ = lim.Decide(ctx, "key:bench", limits) // load the script
	before := count.Count()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, "key:bench", limits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(count.Count()-before)/float64(b.N), "roundtrips/op")
}

// BenchmarkDecideParallel is a busy key decided by 16 goroutines at once,
// as a server's connections do: in memory, from leased shares.
func BenchmarkDecideParallel(b *testing.B) {
	var count testenv.CommandCounter
	c := testenv.RedisClient(b)
	c.AddHook(&count)
	lim := ratelimit.New(redislimit.New(c, testenv.RedisPrefix(b, c, "rl")), ratelimit.Config{})
	b.Cleanup(func() { _ = lim.Close(context.Background()) })
	limits := petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 41}
	ctx := context.Background()
	before := count.Count()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := lim.Decide(ctx, "key:bench", limits); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(count.Count()-before)/float64(b.N), "roundtrips/op")
}
