// Package redislimit is a ratelimit.Leaser on Redis (go-redis v9) for
// limiters in many processes. A Limiter over it leases shares of a
// subject's windows, one Lua script (EVALSHA, one round trip) per share,
// and decides in memory from them; the script does the settlements, the
// ban check, the grant and the strikes atomically, so processes sharing
// one Redis never admit together more than the plan allows while Redis
// answers. Take, the per-request step of ratelimit.Store, is one script
// too.
//
// Each subject is one hash under the store's prefix (prefix + subject).
// Its fields: c:<period ms> and e:<period ms> (a window's count, shares
// granted included, and end), sc and se (the strikes and the strike
// window's end), be (the ban's end), bl and ble (the ban level, for
// doubling, and when it is forgotten). Beside them, two sorted sets:
// prefix + "~bans", the log of bans started and lifted that every process
// polls, and prefix + "~anon", the addresses by last use, which caps them
// (AnonymousCap). Probe writes prefix + "~probe", which expires in a
// second. A script touches the subject's hash and these two keys;
// on Redis Cluster, put a hash tag in the prefix ("{petstore}:rl:") so
// they share a slot. Windows and bans are measured on Redis's clock
// (TIME, read by each script; Redis 5 or later), and every time a caller
// passes or gets back is in the terms of its own clock (Request.Now):
// processes whose clocks disagree still share one window. CallerClock
// measures on the callers' times instead, for a Limiter with a fake
// clock; an end more than its length ahead of that time (a clock that ran
// ahead) then counts as its length, and is written back so (a ban's level
// memory too: a day after the ban's end at most). Key TTLs (relative, so
// independent of the clock) reclaim memory once everything in a hash has
// ended.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/internal/redact"
	"github.com/petstorekit/petstore/ratelimit"
)

// clockLua starts every script that reads the time: now is the script's
// time in milliseconds, and shift what it adds to the caller's times (and
// takes off those it returns). ARGV[1] is the caller's now; with ARGV[2]
// "1", now is Redis's clock (TIME), so that processes whose clocks
// disagree still agree on when a window or a ban ends (Redis 5 or later:
// a script may write after TIME); otherwise it is the caller's, and shift
// is 0 (CallerClock).
const clockLua = `
local shift = 0
if ARGV[2] == "1" then
  local t = redis.call("TIME")
  shift = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[1])
end
local now = tonumber(ARGV[1]) + shift
`

// banLengthLua is the Lua function both scripts use for a ban's length
// at a level: the first ban's (banBase), doubled per level, at most
// banMax, which the script has read from ARGV before it.
const banLengthLua = `
local function banLength(level)
  local length = banBase
  for _ = 2, level do
    if length >= banMax then break end
    length = length * 2
  end
  if length > banMax then length = banMax end
  return length
end
`

// clampBanLua is the Lua both scripts run on the subject's fields f (after
// banLengthLua) before they read a ban: a ban lasts its length at most,
// and its level is remembered banMemory after its end at most, whatever
// clock wrote them. What it clamps it writes back, so that the next call,
// whose now is later, does not clamp again from there: without that, a
// ban written by a clock an hour ahead would be refused "for 15 min" on
// every call for an hour.
const clampBanLua = `
do
  local fix = {}
  local be, ble = f["be"] or 0, f["ble"] or 0
  if be > now + banLength(f["bl"] or 1) then
    be = now + banLength(f["bl"] or 1)
    f["be"] = be
    fix[#fix + 1] = "be"; fix[#fix + 1] = be
  end
  if ble > math.max(be, now) + banMemory then
    f["ble"] = math.max(be, now) + banMemory
    fix[#fix + 1] = "ble"; fix[#fix + 1] = f["ble"]
  end
  if #fix > 0 then redis.call("HSET", key, unpack(fix)) end
end
`

// strikeLua is the Lua both scripts run (after clampBanLua) to count
// strikes and start bans: the one copy of the ban policy on Redis. It
// reads the strike count sc and the strike window's end se from f, and
// defines:
//   - strike(t, k), which counts k quota refusals at t: the first of a
//     strike window starts it and is a strike; those within the grace
//     after it may not have seen its 429 and are not;
//   - startBan(banlog, subject), which starts the subject's next ban at
//     now (twice the last one's length if that ended within banMemory,
//     at most banMax), forgets the strikes, logs the ban in banlog for
//     the other processes, and returns the ban's end.
const strikeLua = `
local sc, se = f["sc"] or 0, f["se"] or 0
local function strike(t, k)
  if k <= 0 then return end
  if se <= t then sc, se, k = 1, t + within, k - 1 end
  if k > 0 and t >= se - within + grace then sc = sc + k end
end
local function startBan(banlog, subject)
  local level, levelEnd = f["bl"] or 0, f["ble"] or 0
  if levelEnd <= now then level = 0 end
  level = level + 1
  local banEnd = now + banLength(level)
  sc, se = 0, 0
  f["be"], f["bl"], f["ble"] = banEnd, level, banEnd + banMemory
  redis.call("HSET", key, "be", banEnd, "bl", level, "ble", banEnd + banMemory, "sc", 0, "se", 0)
  redis.call("ZADD", banlog, now, subject .. "|" .. banEnd)
  redis.call("ZREMRANGEBYSCORE", banlog, "-inf", now - banMax)
  return banEnd
end
`

// script is the whole decision. KEYS: the subject's hash, the ban log.
// ARGV: the caller's now (ms) and clock (see clockLua), bans disabled (0/1),
// strikes tolerated, strike window, first ban, longest ban, ban memory,
// strike grace (all ms), then quota and period (ms) per window, and last
// the subject. It returns {status, refused
// window index (0-based, -1 for none), ban end, then used and end per
// window}; status 0 admitted, 1 refused by a window, 2 banned, 3 banned by
// a ban this request started.
var script = redis.NewScript(`
local key = KEYS[1]
` + clockLua + `
local nobans = ARGV[3] == "1"
local strikes, within = tonumber(ARGV[4]), tonumber(ARGV[5])
local banBase, banMax, banMemory = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local grace = tonumber(ARGV[9])
local n = (#ARGV - 10) / 2

local f = {}
local raw = redis.call("HGETALL", key)
for i = 1, #raw, 2 do f[raw[i]] = tonumber(raw[i + 1]) end

` + banLengthLua + clampBanLua + strikeLua + `
local used, ends, live, periods = {}, {}, {}, {}
local refused = -1
for i = 1, n do
  local quota, p = tonumber(ARGV[8 + 2 * i]), ARGV[9 + 2 * i]
  periods[i] = p
  local c, e = f["c:" .. p] or 0, f["e:" .. p] or 0
  -- A window lasts its length at most, whatever clock wrote its end.
  if e > now + tonumber(p) then e = now + tonumber(p) end
  live[i] = e > now
  if not live[i] then c = 0; e = now + tonumber(p) end
  used[i], ends[i] = c, e
  if refused < 0 and c + 1 > quota then refused = i - 1 end
end

local function reply(status, banEnd)
  local r = {status, refused, banEnd > 0 and banEnd - shift or 0}
  for i = 1, n do r[#r + 1] = used[i]; r[#r + 1] = ends[i] - shift end
  return r
end

local banEnd = f["be"] or 0
if banEnd > now then
  refused = -1
  return reply(2, banEnd)
end

local keep = now
local set = {}
if refused < 0 then
  for i = 1, n do
    used[i] = used[i] + 1
    set[#set + 1] = "c:" .. periods[i]; set[#set + 1] = used[i]
    set[#set + 1] = "e:" .. periods[i]; set[#set + 1] = ends[i]
    if ends[i] > keep then keep = ends[i] end
  end
  redis.call("HSET", key, unpack(set))
else
  if nobans then return reply(1, 0) end
  strike(now, 1)
  if sc <= strikes then
    redis.call("HSET", key, "sc", sc, "se", se)
    keep = se
  else
    banEnd = startBan(KEYS[2], ARGV[#ARGV])
    keep = banEnd + banMemory
    redis.call("PEXPIRE", key, keep - now)
    return reply(3, banEnd)
  end
end
-- The TTL covers everything still running in the hash, so nothing ends
-- early, whatever was written last.
for _, k in ipairs({"se", "be", "ble"}) do
  local v = f[k] or 0
  if v > keep then keep = v end
end
for i = 1, n do
  if live[i] and ends[i] > keep then keep = ends[i] end
end
if keep > now then redis.call("PEXPIRE", key, keep - now) end
return reply(refused < 0 and 0 or 1, 0)
`)

// Store is a ratelimit.Store in Redis. It is safe for concurrent use.
type Store struct {
	client      redis.UniversalClient
	prefix      string
	anonCap     int
	callerClock bool // CallerClock
}

var _ ratelimit.Prober = (*Store)(nil)

// DefaultAnonymousCap is how many anonymous subjects (client addresses)
// a Store tracks unless AnonymousCap says otherwise: at under 400 bytes a
// subject with its index entry (TestFloodKeepsBansInRedis measures 356),
// at most 40 MB of Redis.
const DefaultAnonymousCap = 100_000

// Option configures a Store.
type Option func(*Store)

// AnonymousCap caps the anonymous subjects (client addresses) the Store
// keeps in Redis at n: past it, leasing a new one forgets the least
// recently seen, never one that is banned, striking or has a full window.
// Keys' subjects are never forgotten; the key store bounds them.
func AnonymousCap(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.anonCap = n
		}
	}
}

// CallerClock makes the Store measure windows and bans on the times its
// callers pass (the Limiter's Config.Clock), as a test with a fake clock
// needs, rather than on Redis's clock. Processes sharing the Store must
// then keep their clocks within a few seconds of each other: one whose
// clock is off by more than what is left of a window takes the window the
// others started for over, and nothing bounds what they admit together.
func CallerClock() Option {
	return func(s *Store) { s.callerClock = true }
}

// New returns a Store that keeps its hashes in client under prefix (for
// example "petstore:rl:"). For Decide's timeout to bound every call, the
// client should have ContextTimeoutEnabled set, as ParseOptions's options
// do.
func New(client redis.UniversalClient, prefix string, opts ...Option) *Store {
	s := &Store{client: client, prefix: prefix, anonCap: DefaultAnonymousCap}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Take implements ratelimit.Store in one round trip: EVALSHA, or, the first
// time a server sees the script (or after SCRIPT FLUSH), EVAL with its text.
func (s *Store) Take(ctx context.Context, req ratelimit.Request) (ratelimit.Result, error) {
	p := req.Ban
	if !p.Disabled {
		p = p.WithDefaults()
	}
	args := make([]any, 0, 9+2*len(req.Rates))
	args = append(args, req.Now.UnixMilli(), boolArg(!s.callerClock), boolArg(p.Disabled), p.Strikes,
		p.Within.Milliseconds(), p.Duration.Milliseconds(), p.Max.Milliseconds(), p.Memory.Milliseconds(),
		p.GraceOrZero().Milliseconds())
	for _, r := range req.Rates {
		args = append(args, r.Quota, r.Period.Milliseconds())
	}
	args = append(args, req.Subject)
	v, err := script.Run(ctx, s.client, []string{s.prefix + req.Subject, s.prefix + banLogKey}, args...).Result()
	if err != nil {
		return ratelimit.Result{}, fmt.Errorf("redislimit: %w", err)
	}
	return parseReply(v, len(req.Rates))
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseReply decodes the script's reply for n windows.
func parseReply(v any, n int) (ratelimit.Result, error) {
	bad := errors.New("redislimit: malformed script reply")
	a, ok := v.([]any)
	if !ok || len(a) != 3+2*n {
		return ratelimit.Result{}, bad
	}
	ints := make([]int64, len(a))
	for i, x := range a {
		if ints[i], ok = x.(int64); !ok {
			return ratelimit.Result{}, bad
		}
	}
	status, refused := ints[0], ints[1]
	if status < 0 || status > 3 || refused < -1 || refused >= int64(n) || (status == 0 && refused != -1) || (status == 1 && refused < 0) {
		return ratelimit.Result{}, bad
	}
	res := ratelimit.Result{
		Allowed:    status == 0,
		Refused:    int(refused),
		Banned:     status >= 2,
		BanStarted: status == 3,
		Windows:    make([]ratelimit.WindowCount, n),
	}
	if res.Banned {
		res.BanEnd = time.UnixMilli(ints[2])
		res.Refused = -1
	}
	for i := range n {
		used := ints[3+2*i]
		if used < 0 {
			return ratelimit.Result{}, bad
		}
		res.Windows[i] = ratelimit.WindowCount{Used: used, Reset: time.UnixMilli(ints[4+2*i])}
	}
	return res, nil
}

// ParseOptions turns the -redis flag into client options: "host:port" or a
// redis:// (rediss:// for TLS) URL with an optional password and database
// number. A host:port with user info ("PASSWORD@host:port") is refused:
// the password goes in a URL, never where a host name is quoted. The options bound every call by its context's deadline and keep
// dial and I/O timeouts short, so a Redis that is down costs a request
// little and never hangs it.
func ParseOptions(addr string) (*redis.Options, error) {
	var o *redis.Options
	switch {
	case addr == "":
		return nil, errors.New("redislimit: empty Redis address")
	case strings.Contains(addr, "://"):
		var err error
		if o, err = redis.ParseURL(addr); err != nil {
			return nil, fmt.Errorf("redislimit: Redis URL %s: %w", redact.URL(addr), redact.URLError(err))
		}
	default:
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			return nil, fmt.Errorf("redislimit: Redis address %q is neither host:port nor a redis:// URL", redact.URL(addr))
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("redislimit: bad port in Redis address %q", redact.URL(addr))
		}
		if strings.Contains(host, "@") {
			// A password before the host: taken for the host's name, every
			// failed dial would quote it.
			return nil, fmt.Errorf("redislimit: Redis address %q has user info: give a password in a redis:// URL (redis://:PASSWORD@host:port)", redact.URL(addr))
		}
		o = &redis.Options{Addr: net.JoinHostPort(host, port)}
	}
	o.ContextTimeoutEnabled = true
	o.DialTimeout = 500 * time.Millisecond
	// The limiter's StoreTimeout (1 s by default) bounds each call
	// through its context; these bound calls made without a deadline.
	o.ReadTimeout = time.Second
	o.WriteTimeout = time.Second
	o.MaxRetries = -1 // a retry would only double the wait on a dead server
	o.DialerRetries = 1
	// A new connection sends HELLO alone, without go-redis's CLIENT
	// SETINFO round trip after it: one opened for a burst fits the store
	// timeout on a slower link (the bound: docs/rate-limits.md, "When
	// Redis fails").
	o.DisableIdentity = true
	return o, nil
}
