package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/ratelimit"
)

// leaseScript is ratelimit.Leaser.Lease in one step. KEYS: the subject's
// hash, the index of anonymous subjects, the ban log. ARGV: the caller's
// now (ms) and clock (see clockLua), bans disabled (0/1), strikes tolerated, strike window, first ban, longest
// ban, ban memory, strike grace (all ms), units wanted, refusals, first
// refusal (ms), the cap of anonymous subjects (0: the subject is a key),
// the subject, units needed now, last refusal (ms); then per window
// quota, period (ms), units returned, the end (ms) they were granted in
// (or, with no window running, where the debt's window ends), debt. It
// returns {granted, refused window (0-based, -1 for none), ban end (0:
// none), ban started (0/1), then used and end per window}.
var leaseScript = redis.NewScript(`
local key, anon, banlog = KEYS[1], KEYS[2], KEYS[3]
` + clockLua + `
local nobans = ARGV[3] == "1"
local strikes, within = tonumber(ARGV[4]), tonumber(ARGV[5])
local banBase, banMax, banMemory = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local grace = tonumber(ARGV[9])
local want, refusals, first = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local anonCap, subject, need = tonumber(ARGV[13]), ARGV[14], tonumber(ARGV[15])
local last = tonumber(ARGV[16])
if first > 0 then first = first + shift end
if last > 0 then last = last + shift end
local n = (#ARGV - 16) / 5

` + banLengthLua + `
local f = {}
local raw = redis.call("HGETALL", key)
for i = 1, #raw, 2 do f[raw[i]] = tonumber(raw[i + 1]) end
` + clampBanLua + strikeLua + `

local used, ends, periods, quotas = {}, {}, {}, {}
local grant, refused = want, -1
for i = 1, n do
  local b = 16 + 5 * (i - 1)
  local quota, p = tonumber(ARGV[b + 1]), ARGV[b + 2]
  local period = tonumber(p)
  local ret, retEnd, debt = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
  if retEnd > 0 then retEnd = retEnd + shift end
  local c, e = f["c:" .. p] or 0, f["e:" .. p] or 0
  -- A window lasts its length at most, whatever clock wrote its end.
  if e > now + period then e = now + period end
  if e <= now then c, e = 0, 0 end
  -- The window the units were granted in: ends told back through
  -- another call's shift differ by milliseconds, those of two windows
  -- by a period at least.
  if ret > 0 and e > 0 and math.abs(e - retEnd) * 2 < period then c = math.max(0, c - ret) end
  if debt > 0 then
    c = c + debt
    -- A window the process started on its own while Redis failed ends
    -- where the process said it ends (retEnd), so that the Retry-After
    -- it gave is not early; it lasts its length at most.
    if e == 0 then
      if retEnd > now and retEnd <= now + period then e = retEnd else e = now + period end
    end
  end
  local room = quota - c
  local share = 0
  if room > 0 then
    -- What is waiting; spares too (a quarter of what is left at most)
    -- only while the window is less than half used, so that near the
    -- quota no process holds what another could use.
    share = math.min(need, room)
    if room * 2 > quota then share = math.max(share, math.min(want, math.floor(room / 4))) end
  elseif refused < 0 then
    refused = i - 1
  end
  if share < grant then grant = share end
  used[i], ends[i], periods[i], quotas[i] = c, e, p, quota
end
if want <= 0 then grant = 0 end

local banEnd = f["be"] or 0
local banned, started = banEnd > now, 0
if banned then grant, refused = 0, -1 end
if want <= 0 then refused = -1 end

local own = want > 0 and grant == 0 and not banned
if (refusals > 0 or own) and not banned and not nobans then
  -- The process's refusals: the first at its own time, the others at the
  -- last one's (they came between); then this call's own, now.
  if refusals > 0 then
    strike(first > 0 and first or now, 1)
    strike(last > 0 and last or now, refusals - 1)
  end
  if own then strike(now, 1) end
  if sc > strikes then
    banEnd = startBan(banlog, subject)
    -- The ban refuses this call's requests too: nothing is granted.
    banned, started, grant = true, 1, 0
  end
end

if grant > 0 then
  refused = -1
  for i = 1, n do
    used[i] = used[i] + grant
    if ends[i] == 0 then ends[i] = now + tonumber(periods[i]) end
  end
end

local set = {"sc", sc, "se", se}
local keep = math.max(se, banEnd, f["ble"] or 0)
local kept = banned or (f["ble"] or 0) > now or se > now
for i = 1, n do
  if ends[i] > 0 then
    set[#set + 1] = "c:" .. periods[i]; set[#set + 1] = used[i]
    set[#set + 1] = "e:" .. periods[i]; set[#set + 1] = ends[i]
    if ends[i] > keep then keep = ends[i] end
    if used[i] >= quotas[i] then kept = true end
  end
end
if keep > now then
  redis.call("HSET", key, unpack(set))
  redis.call("PEXPIRE", key, keep - now)
else
  redis.call("DEL", key)
end

-- Anonymous subjects are capped: the least recently seen is forgotten,
-- never one that is banned, striking or has a full window (those are not
-- in the index, and leave Redis when their state ends).
if anonCap > 0 then
  if kept or keep <= now then
    redis.call("ZREM", anon, key)
  else
    redis.call("ZADD", anon, now, key)
    local over = redis.call("ZCARD", anon) - anonCap
    if over > 0 then
      local old = redis.call("ZPOPMIN", anon, over)
      for i = 1, #old, 2 do
        if old[i] ~= key then redis.call("DEL", old[i]) end
      end
    end
  end
end

local reply = {grant, refused, 0, started}
if banned then reply[3] = banEnd - shift end
for i = 1, n do
  reply[#reply + 1] = used[i]
  if ends[i] > 0 then reply[#reply + 1] = ends[i] - shift else reply[#reply + 1] = now - shift + tonumber(periods[i]) end
end
return reply
`)

// Lease implements ratelimit.Leaser in one round trip.
func (s *Store) Lease(ctx context.Context, req ratelimit.LeaseRequest) (ratelimit.LeaseResult, error) {
	p := req.Ban
	if !p.Disabled {
		p = p.WithDefaults()
	}
	anonCap := 0
	if req.Anonymous {
		anonCap = s.anonCap
	}
	var first, last int64
	if !req.FirstRefusal.IsZero() {
		first = req.FirstRefusal.UnixMilli()
	}
	if !req.LastRefusal.IsZero() {
		last = req.LastRefusal.UnixMilli()
	}
	need := min(max(req.Need, 1), req.Want)
	args := make([]any, 0, 16+5*len(req.Rates))
	args = append(args, req.Now.UnixMilli(), boolArg(!s.callerClock), boolArg(p.Disabled), p.Strikes,
		p.Within.Milliseconds(), p.Duration.Milliseconds(), p.Max.Milliseconds(), p.Memory.Milliseconds(),
		p.GraceOrZero().Milliseconds(), req.Want, req.Refusals, first, anonCap, req.Subject, need, last)
	for i, r := range req.Rates {
		var st ratelimit.Settlement
		if i < len(req.Settle) {
			st = req.Settle[i]
		}
		var end int64
		if !st.End.IsZero() {
			end = st.End.UnixMilli()
		}
		args = append(args, r.Quota, r.Period.Milliseconds(), st.Returned, end, st.Debt)
	}
	keys := []string{s.prefix + req.Subject, s.prefix + anonKey, s.prefix + banLogKey}
	v, err := leaseScript.Run(ctx, s.client, keys, args...).Result()
	if err != nil {
		return ratelimit.LeaseResult{}, fmt.Errorf("redislimit: %w", err)
	}
	return parseLeaseReply(v, len(req.Rates))
}

// parseLeaseReply decodes the lease script's reply for n windows.
func parseLeaseReply(v any, n int) (ratelimit.LeaseResult, error) {
	bad := errors.New("redislimit: malformed lease reply")
	a, ok := v.([]any)
	if !ok || len(a) != 4+2*n {
		return ratelimit.LeaseResult{}, bad
	}
	ints := make([]int64, len(a))
	for i, x := range a {
		if ints[i], ok = x.(int64); !ok {
			return ratelimit.LeaseResult{}, bad
		}
	}
	granted, refused, ban, started := ints[0], ints[1], ints[2], ints[3]
	if granted < 0 || refused < -1 || refused >= int64(n) || ban < 0 || (started == 1 && ban == 0) || (granted > 0 && (ban > 0 || refused >= 0)) {
		return ratelimit.LeaseResult{}, bad
	}
	res := ratelimit.LeaseResult{Granted: granted, Refused: int(refused), Banned: ban > 0, BanStarted: started == 1, Windows: make([]ratelimit.WindowCount, n)}
	if res.Banned {
		res.BanEnd = time.UnixMilli(ban)
	}
	for i := range n {
		used := ints[4+2*i]
		if used < 0 {
			return ratelimit.LeaseResult{}, bad
		}
		res.Windows[i] = ratelimit.WindowCount{Used: used, Reset: time.UnixMilli(ints[5+2*i])}
	}
	return res, nil
}

// banEventsScript reads the ban log from a time on. KEYS: the ban log.
// ARGV: the caller's now (ms) and clock (see clockLua), since (ms, in
// the caller's time; "-inf" for all). It returns shift, then member and
// score (on the log's clock) of each entry, oldest first.
var banEventsScript = redis.NewScript(clockLua + `
local min = ARGV[3]
if min ~= "-inf" then min = tonumber(min) + shift end
local out = {shift}
local zs = redis.call("ZRANGEBYSCORE", KEYS[1], min, "+inf", "WITHSCORES")
for i = 1, #zs do out[#out + 1] = zs[i] end
return out
`)

// BanEvents implements ratelimit.Leaser: one script that reads the ban
// log (ZRANGEBYSCORE).
func (s *Store) BanEvents(ctx context.Context, since, now time.Time) ([]ratelimit.BanEvent, error) {
	min := "-inf"
	if !since.IsZero() {
		min = strconv.FormatInt(since.UnixMilli(), 10)
	}
	v, err := banEventsScript.Run(ctx, s.client, []string{s.prefix + banLogKey}, now.UnixMilli(), boolArg(!s.callerClock), min).Slice()
	if err != nil {
		return nil, fmt.Errorf("redislimit: %w", err)
	}
	if len(v)%2 != 1 {
		return nil, errors.New("redislimit: malformed ban log reply")
	}
	shift, ok := v[0].(int64)
	if !ok {
		return nil, errors.New("redislimit: malformed ban log reply")
	}
	out := make([]ratelimit.BanEvent, 0, len(v)/2)
	for i := 1; i < len(v); i += 2 {
		m, _ := v[i].(string)
		score, _ := v[i+1].(string)
		at, err := strconv.ParseFloat(score, 64)
		j := strings.LastIndexByte(m, '|')
		if err != nil || j < 0 {
			continue
		}
		ev := ratelimit.BanEvent{Subject: m[:j], At: time.UnixMilli(int64(at) - shift)}
		if tail := m[j+1:]; tail != "lifted" {
			end, err := strconv.ParseInt(tail, 10, 64)
			if err != nil || end <= 0 {
				continue
			}
			ev.Until = time.UnixMilli(end - shift)
		}
		out = append(out, ev)
	}
	return out, nil
}

// Probe implements ratelimit.Prober: one SET of a key that expires in a
// second, refused as the scripts' writes are when Redis is out of memory
// (maxmemory with noeviction) or a read-only replica.
func (s *Store) Probe(ctx context.Context, now time.Time) error {
	if err := s.client.Set(ctx, s.prefix+probeKey, now.UnixMilli(), time.Second).Err(); err != nil {
		return fmt.Errorf("redislimit: %w", err)
	}
	return nil
}

// The keys beside the subjects' hashes, under the prefix. Subjects start
// with a kind and a colon ("key:", "ip:", "pub:"), so these never collide.
const (
	anonKey   = "~anon"  // sorted set: anonymous subjects by last use
	banLogKey = "~bans"  // sorted set: "subject|ban end (ms)" by start, or "subject|lifted" by the lift's time
	probeKey  = "~probe" // string: the last probe's time (ms), for a second
)
