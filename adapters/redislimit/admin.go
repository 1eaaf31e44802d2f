package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/ratelimit"
)

var _ ratelimit.Admin = (*Store)(nil)

// Bans implements ratelimit.Admin: it scans the store's prefix (SCAN,
// never KEYS, so a large keyspace does not block Redis) and reads each
// subject's ban end.
func (s *Store) Bans(ctx context.Context, now time.Time) ([]ratelimit.Ban, error) {
	out := []ratelimit.Ban{}
	pattern := escapeGlob(s.prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := s.client.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return nil, fmt.Errorf("redislimit: %w", err)
		}
		if len(keys) > 0 {
			cmds := make([]*redis.StringCmd, len(keys))
			_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, k := range keys {
					cmds[i] = p.HGet(ctx, k, "be")
				}
				return nil
			})
			if err != nil && err != redis.Nil {
				return nil, fmt.Errorf("redislimit: %w", err)
			}
			for i, c := range cmds {
				end, err := c.Int64()
				if err != nil || end <= now.UnixMilli() {
					continue // no ban field, or a ban that has ended
				}
				out = append(out, ratelimit.Ban{Subject: strings.TrimPrefix(keys[i], s.prefix), Until: time.UnixMilli(end)})
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	ratelimit.SortBans(out)
	return out, nil
}

// liftScript ends a ban and forgets strikes and ban level in one step,
// reporting whether a ban was in force. ARGV: now (ms).
var liftScript = redis.NewScript(`
local be = tonumber(redis.call("HGET", KEYS[1], "be") or "0")
redis.call("HDEL", KEYS[1], "be", "bl", "ble", "sc", "se")
if be > tonumber(ARGV[1]) then return 1 end
return 0
`)

// Lift implements ratelimit.Admin.
func (s *Store) Lift(ctx context.Context, subject string, now time.Time) (bool, error) {
	n, err := liftScript.Run(ctx, s.client, []string{s.prefix + subject}, now.UnixMilli()).Int()
	if err != nil {
		return false, fmt.Errorf("redislimit: %w", err)
	}
	return n == 1, nil
}

// Usage implements ratelimit.Admin with one HMGET of the windows' fields.
func (s *Store) Usage(ctx context.Context, subject string, rates []ratelimit.Rate, now time.Time) ([]ratelimit.Window, error) {
	fields := make([]string, 0, 2*len(rates))
	for _, r := range rates {
		p := strconv.FormatInt(r.Period.Milliseconds(), 10)
		fields = append(fields, "c:"+p, "e:"+p)
	}
	vals, err := s.client.HMGet(ctx, s.prefix+subject, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("redislimit: %w", err)
	}
	counts := make([]ratelimit.WindowCount, len(rates))
	for i, r := range rates {
		counts[i] = ratelimit.WindowCount{Reset: now.Add(r.Period)}
		used, _ := vals[2*i].(string)
		end, _ := vals[2*i+1].(string)
		u, err1 := strconv.ParseInt(used, 10, 64)
		e, err2 := strconv.ParseInt(end, 10, 64)
		if err1 == nil && err2 == nil && e > now.UnixMilli() {
			counts[i] = ratelimit.WindowCount{Used: u, Reset: time.UnixMilli(e)}
		}
	}
	return ratelimit.UsageWindows(rates, counts), nil
}

// escapeGlob escapes the characters SCAN's MATCH treats specially.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
