package redislimit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// FuzzBanEvents: whatever member the ban log in Redis holds (written by
// another version, or by hand), BanEvents reads it without failing: a
// "subject|lifted" is a lift and a "subject|END" with a positive END (ms)
// a ban until then, both at the member's score; anything else is skipped.
func FuzzBanEvents(f *testing.F) {
	testenv.RedisURL(f)
	c := testenv.RedisClient(f)
	prefix := testenv.RedisPrefix(f, c, "rl-banlog")
	s, log := redislimit.New(c, prefix, redislimit.CallerClock()), prefix+redislimit.BanLogKey
	for _, m := range []string{"ip:192.0.2.1|1800000000000", "key:k|lifted", "a|b|5", "nobar", "x|0", "x|-5", "|7", "x|", "x|9223372036854775808"} {
		f.Add(m, int64(1700000000000))
	}
	now := time.UnixMilli(1800000000000)
	f.Fuzz(func(t *testing.T, member string, score int64) {
		score %= 1 << 50 // exact as a Redis score
		ctx := context.Background()
		if err := c.ZAdd(ctx, log, redis.Z{Score: float64(score), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
		defer c.Del(ctx, log)
		got, err := s.BanEvents(ctx, time.Time{}, now)
		if err != nil {
			t.Fatalf("BanEvents over %q: %v", member, err)
		}
		var want []ratelimit.BanEvent
		if j := strings.LastIndexByte(member, '|'); j >= 0 {
			ev := ratelimit.BanEvent{Subject: member[:j], At: time.UnixMilli(score)}
			end, err := strconv.ParseInt(member[j+1:], 10, 64)
			switch {
			case member[j+1:] == "lifted":
				want = append(want, ev)
			case err == nil && end > 0:
				ev.Until = time.UnixMilli(end)
				want = append(want, ev)
			}
		}
		if len(got) != len(want) || len(got) == 1 && (got[0].Subject != want[0].Subject || !got[0].At.Equal(want[0].At) || !got[0].Until.Equal(want[0].Until)) {
			t.Fatalf("ban log member %q at %d read as %+v, want %+v", member, score, got, want)
		}
	})
}
