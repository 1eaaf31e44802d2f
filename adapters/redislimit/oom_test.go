package redislimit_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// TestRedisRefusingWritesIsOneOutage: a Redis out of memory (maxmemory,
// noeviction) refuses every lease but still answers the ban poll's
// reads. That is one outage, logged once, until writes work again, not a
// recovery at each poll: a server failing closed stays unready meanwhile
// (and answers 503), and one failing open admits at most the quota on
// its own. Once Redis accepts writes again the outage ends without a
// request, as after a cut.
func TestRedisRefusingWritesIsOneOutage(t *testing.T) {
	t.Parallel()
	for _, failClosed := range []bool{true, false} {
		name := "fail open"
		if failClosed {
			name = "fail closed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, _ := privateRedis(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
			o, err := redislimit.ParseOptions(addr)
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(o)
			t.Cleanup(func() { _ = c.Close() })
			ctx := context.Background()
			// Fill the private server until it refuses writes.
			big := strings.Repeat("x", 64<<10)
			for i := 0; ; i++ {
				if err := c.Set(ctx, "fill:"+string(rune('a'+i%26))+strings.Repeat("!", i/26), big, 0).Err(); err != nil {
					if !strings.Contains(err.Error(), "OOM") {
						t.Fatal(err)
					}
					break
				}
			}
			logs := &testenv.Buffer{}
			lim := ratelimit.New(redislimit.New(c, "t:"), ratelimit.Config{FailClosed: failClosed,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			t.Cleanup(func() { _ = lim.Close(context.Background()) })
			admitted := 0
			for range 100 { // 2 s of requests
				d, err := lim.Decide(ctx, "key:oom", ratelimittest.Free)
				switch {
				case failClosed && petstore.ErrorCode(err) != petstore.CodeUnavailable:
					t.Fatalf("failing closed, Redis refusing writes: %+v, %v; want unavailable", d, err)
				case !failClosed && err != nil:
					t.Fatal(err)
				case d.Allowed:
					admitted++
				}
				time.Sleep(20 * time.Millisecond)
			}
			if admitted > int(ratelimittest.Free.PerMinute) {
				t.Fatalf("admitted %d on its own, want the minute's quota at most", admitted)
			}
			// No request for a second: the ban poll's reads must not end
			// the outage.
			for range 20 {
				if st := lim.Status(); !st.Degraded || st.Ready() == failClosed {
					t.Fatalf("Redis still refusing writes: status %+v (ready %v)\n%s", st, st.Ready(), logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n, m := strings.Count(logs.String(), "rate limit store failed"), strings.Count(logs.String(), "recovered"); n != 1 || m != 0 {
				t.Fatalf("one outage logged as %d failures and %d recoveries:\n%s", n, m, logs.String())
			}
			if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); lim.Status().Degraded; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("Redis accepts writes again, but 5 s later the limiter is still degraded:\n%s", logs.String())
				}
			}
			if d, err := lim.Decide(ctx, "key:oom2", ratelimittest.Free); err != nil || !d.Allowed || d.Degraded {
				t.Fatalf("after the outage: %+v, %v", d, err)
			}
			if n := strings.Count(logs.String(), "recovered"); n != 1 {
				t.Fatalf("the outage's end logged %d times:\n%s", n, logs.String())
			}
		})
	}
}
