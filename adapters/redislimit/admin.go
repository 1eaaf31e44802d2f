package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/ratelimit"
)

var _ ratelimit.Admin = (*Store)(nil)

// Bans implements ratelimit.Admin from the ban log, which every ban
// started and lifted goes into: one read, however many subjects Redis
// holds.
func (s *Store) Bans(ctx context.Context, now time.Time) ([]ratelimit.Ban, error) {
	evs, err := s.BanEvents(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	latest := map[string]time.Time{}
	for _, ev := range evs { // oldest first: the last event of a subject holds
		latest[ev.Subject] = ev.Until
	}
	out := []ratelimit.Ban{}
	for sub, until := range latest {
		if until.After(now) {
			out = append(out, ratelimit.Ban{Subject: sub, Until: until})
		}
	}
	ratelimit.SortBans(out)
	return out, nil
}

// liftScript ends a ban and forgets strikes and ban level in one step,
// logs the lift for the other processes, and reports whether a ban was in
// force. KEYS: the subject's hash, the ban log. ARGV: now (ms), subject.
var liftScript = redis.NewScript(`
local be = tonumber(redis.call("HGET", KEYS[1], "be") or "0")
redis.call("HDEL", KEYS[1], "be", "bl", "ble", "sc", "se")
-- "lifted" sorts after the digits of a ban's end: a lift in the same
-- millisecond as the ban comes after it in the log.
redis.call("ZADD", KEYS[2], ARGV[1], ARGV[2] .. "|lifted")
if be > tonumber(ARGV[1]) then return 1 end
return 0
`)

// Lift implements ratelimit.Admin.
func (s *Store) Lift(ctx context.Context, subject string, now time.Time) (bool, error) {
	n, err := liftScript.Run(ctx, s.client, []string{s.prefix + subject, s.prefix + banLogKey}, now.UnixMilli(), subject).Int()
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
