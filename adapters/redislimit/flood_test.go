package redislimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// TestFloodKeepsBansInRedis is issue 28's Redis case: a banned key and
// address, and a key and an address whose day is spent, then a flood of new
// addresses. Redis holds at most the anonymous cap of addresses, at a
// bounded size each, and a process that never saw the four still refuses
// them: Redis kept them.
//
// It is not parallel: its 32 goroutines keep every core of the test
// binary busy for the whole flood (8 s alone under -race, up to a minute
// on a loaded machine), and the goroutines of the tests beside it, fault
// proxies included, wait behind them. A 200 ms store call of another test
// then times out, as TestRetryAfterOfAnOutageIsNeverEarly's warm-up did.
func TestFloodKeepsBansInRedis(t *testing.T) {
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "flood")
	const capSubjects = 20_000
	flood := 300_000
	if raceEnabled || testing.Short() {
		flood = 40_000
	}
	var off atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
	lim := ratelimit.New(redislimit.New(c, prefix, redislimit.AnonymousCap(capSubjects), redislimit.CallerClock()),
		ratelimit.Config{Clock: clock, FallbackSubjects: capSubjects})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	decide := func(lim *ratelimit.Limiter, sub string) ratelimit.Decision {
		d, err := lim.Decide(ctx, sub, ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const banned, spent = "ip:192.0.2.1", "ip:192.0.2.2"
	const bannedKey, spentKey = "key:flood-banned", "key:flood-spent"
	for i := range 1000 {
		if i%60 == 0 {
			off.Add(int64(time.Minute))
		}
		for _, sub := range []string{spent, spentKey} {
			if d := decide(lim, sub); !d.Allowed {
				t.Fatalf("request %d of the day for %s refused: %+v", i+1, sub, d)
			}
		}
	}
	for _, sub := range []string{banned, bannedKey} {
		for i := 0; decide(lim, sub).Code != petstore.CodeAPIKeyBanned; i++ {
			if i == 61 {
				off.Add(int64(time.Second)) // past the strike grace
			}
		}
	}

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(flood); i = next.Add(1) {
				if _, err := lim.Decide(ctx, fmt.Sprintf("ip:10.%d.%d.%d", i>>16, (i>>8)&255, i&255), ratelimittest.Free); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d new addresses in %v; limiter %+v", flood, time.Since(start).Round(time.Millisecond), lim.Stats())

	// A process that never saw them asks Redis.
	other := ratelimit.New(redislimit.New(testenv.RedisClient(t), prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clock})
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	for _, sub := range []string{banned, bannedKey} {
		if d := decide(other, sub); d.Code != petstore.CodeAPIKeyBanned {
			t.Fatalf("banned %s after the flood: %+v, want still banned", sub, d)
		}
	}
	for _, sub := range []string{spent, spentKey} {
		if d := decide(other, sub); d.Allowed || d.Binding.Name != "day" {
			t.Fatalf("spent %s after the flood: %+v, want refused by the day", sub, d)
		}
	}

	var keys []string
	iter := c.Scan(ctx, 0, prefix+"ip:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	var sample int64
	n := min(len(keys), 200)
	for _, k := range keys[:n] {
		sample += c.MemoryUsage(ctx, k).Val()
	}
	index := c.MemoryUsage(ctx, prefix+"~anon").Val()
	perSubject := float64(sample)/float64(max(n, 1)) + float64(index)/float64(max(len(keys), 1))
	total := perSubject * float64(len(keys))
	t.Logf("Redis after the flood: %d address hashes, %.0f bytes each with its index entry, about %.1f MB", len(keys), perSubject, total/(1<<20))
	if len(keys) > capSubjects+2 {
		t.Fatalf("%d address hashes in Redis, want at most the cap %d and the 2 kept ones", len(keys), capSubjects)
	}
	// The documented bound: 400 bytes an address, index included.
	if perSubject > 400 {
		t.Fatalf("%.0f bytes an address, want at most 400", perSubject)
	}
}
