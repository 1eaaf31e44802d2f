package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/ratelimit"
)

var _ ratelimit.Admin = (*Store)(nil)

// Bans implements ratelimit.Admin from the ban log, which every ban
// started and lifted goes into: one read, however many subjects Redis
// holds. A ban lasts its length at most from now, as Decide holds it,
// whatever clock started it (CallerClock).
func (s *Store) Bans(ctx context.Context, now time.Time) ([]ratelimit.Ban, error) {
	evs, err := s.BanEvents(ctx, time.Time{}, now)
	if err != nil {
		return nil, err
	}
	latest := map[string]time.Time{}
	for _, ev := range evs { // oldest first: the last event of a subject holds
		latest[ev.Subject] = earlier(ev.Until, now.Add(ev.Until.Sub(ev.At)))
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
// force. KEYS: the subject's hash, the ban log. ARGV: the caller's now
// (ms) and clock (see clockLua), subject.
var liftScript = redis.NewScript(clockLua + `
local be = tonumber(redis.call("HGET", KEYS[1], "be") or "0")
redis.call("HDEL", KEYS[1], "be", "bl", "ble", "sc", "se")
-- "lifted" sorts after the digits of a ban's end: a lift in the same
-- millisecond as the ban comes after it in the log.
redis.call("ZADD", KEYS[2], now, ARGV[3] .. "|lifted")
if be > now then return 1 end
return 0
`)

// Lift implements ratelimit.Admin.
func (s *Store) Lift(ctx context.Context, subject string, now time.Time) (bool, error) {
	n, err := liftScript.Run(ctx, s.client, []string{s.prefix + subject, s.prefix + banLogKey}, now.UnixMilli(), boolArg(!s.callerClock), subject).Int()
	if err != nil {
		return false, fmt.Errorf("redislimit: %w", err)
	}
	return n == 1, nil
}

// usageScript reads a subject's windows. KEYS: the subject's hash. ARGV:
// the caller's now (ms) and clock (see clockLua), then the fields. It
// returns now (ms, the caller's time), then each field's value ("" for
// none) with the ends in the caller's time.
var usageScript = redis.NewScript(clockLua + `
local out = {now - shift}
local vals = redis.call("HMGET", KEYS[1], unpack(ARGV, 3))
for i = 1, #ARGV - 2 do
  local v = tonumber(vals[i])
  if v and string.sub(ARGV[i + 2], 1, 2) == "e:" then v = v - shift end
  out[#out + 1] = v or -1
end
return out
`)

// Usage implements ratelimit.Admin with one script that reads the
// windows' fields (HMGET). A window lasts its length at most from now, as
// Decide holds it, whatever clock wrote its end (CallerClock).
func (s *Store) Usage(ctx context.Context, subject string, rates []ratelimit.Rate, now time.Time) ([]ratelimit.Window, error) {
	args := make([]any, 0, 2+2*len(rates))
	args = append(args, now.UnixMilli(), boolArg(!s.callerClock))
	for _, r := range rates {
		p := strconv.FormatInt(r.Period.Milliseconds(), 10)
		args = append(args, "c:"+p, "e:"+p)
	}
	vals, err := usageScript.Run(ctx, s.client, []string{s.prefix + subject}, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("redislimit: %w", err)
	}
	if len(vals) != 1+2*len(rates) {
		return nil, errors.New("redislimit: malformed usage reply")
	}
	counts := make([]ratelimit.WindowCount, len(rates))
	for i, r := range rates {
		counts[i] = ratelimit.WindowCount{Reset: now.Add(r.Period)}
		if u, e := vals[1+2*i], vals[2+2*i]; u >= 0 && e > vals[0] {
			counts[i] = ratelimit.WindowCount{Used: u, Reset: earlier(time.UnixMilli(e), now.Add(r.Period))}
		}
	}
	return ratelimit.UsageWindows(rates, counts), nil
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
