// Package ratelimit decides whether a request may proceed under its plan's
// limits: two fixed windows (a minute and a day) per key, and temporary bans
// for clients that keep sending after a 429. It holds no HTTP and no Redis:
// counters live behind a small Store interface with in-memory and Redis
// adapters, and httpx turns a Decision into headers.
//
// # Plans
//
//	Plan        per minute   per day
//	Free                60     1,000
//	Pro                300    10,000
//	Business         1,000   100,000
//	Enterprise      custom    custom (the key's own Limits)
//
// Requests without a valid key are limited per client address with the Free
// plan's figures. Limits are passed to every Limiter.Decide call, so a plan
// change applies from the next request; the counts carry over.
//
// # Windows
//
// Each window is fixed and starts at the subject's first admitted request
// after the previous window ended, not at the top of the clock's minute or
// day: clients whose windows are aligned to the clock all come back at the
// same instant, and such a stampede is what a limiter is for preventing.
// Only admitted requests consume quota: a request refused by the minute
// costs no day quota, and one refused by the day costs no minute quota. A
// Store does the whole step (ban check, both windows, strike) atomically,
// so concurrent requests, in one process or many sharing Redis, never
// admit more than the quota.
//
// # Bans
//
// Each quota refusal is a strike, except those within a second after the
// first refusal of a strike window (BanPolicy.Grace): a burst sent before
// any answer arrived could not have seen its 429, so it is one strike, not
// a reason to ban. More than 30 strikes within a minute (a fixed strike
// window from the first refusal) ban the subject for 15 minutes; a ban
// that starts within 24 hours after the previous one ended lasts twice as
// long as that one, up to 24 hours. While banned, every
// request is refused with api_key_banned and a Retry-After until the ban's
// end, and touches no counter, so a ban cannot extend itself. A client that
// waits for Retry-After gets at most one strike per window and is never
// banned, and so is one that sent a burst before its first answer and then
// waits. Bans live in the store, so they hold across processes. See
// BanPolicy to change the figures.
//
// # Shared stores
//
// A store that implements Leaser (adapters/redislimit) is shared by many
// processes without a round trip per request: each Limiter leases shares
// of a subject's windows, one call per share, and decides in memory from
// them; the store counts every unit it grants, so together the processes
// never admit more than the quota while it answers. Shares are what is
// waiting, plus spares while a window is less than half used; they are
// given back when a window ends, when left unused for a second, and by
// Limiter.Close; until then a spare is held, not lost, and another
// process may refuse what it would have admitted. Bans are polled from
// the store every Config.BanPoll (250 ms), so every process refuses a ban
// within a second, and keeps refusing it while the store is unreachable.
// docs/rate-limits.md publishes the over-admission bound of each failure
// and the tests that hold it.
//
// # When the store fails
//
// Every store call is bounded by Config.StoreTimeout (1 s by default).
// When a call fails or times out, the process decides on its own with the
// same limits, starting from the last shared figures: over-admission is
// bounded by the number of processes, never unlimited, and known bans and
// full windows stay in force. What it admits so is owed to the store and
// told to it with the next call (a Leaser's, or a Debtor's such as
// adapters/limiterstore; a store that is neither never learns of it).
// Such decisions carry Decision.Degraded (their figures are this
// process's estimate).
// After Config.BreakerFailures failures in a row with no success for a
// StoreTimeout, the store is taken for down and only probed once per
// Config.BreakerCooldown. Over a Leaser the ban poll counts as a call: one
// that fails starts or extends an outage, and one that reaches the store
// (and, over a Prober, has a write accepted) ends it, so a process that no
// request reaches (out of a load balancer's rotation, or quiet) sees the
// store go and come back.
// Failing closed (Config.FailClosed) returns an
// unavailable error (503) only while the store is unreachable (its last
// call was refused or dropped); a store that is only slow is decided
// locally in both modes. Every outage is logged when it starts (then at
// most once per Config.LogInterval while it lasts) and when it ends,
// without the subject, and Limiter.Status reports it for a readiness
// check. Windows and bans are measured on the monotonic clock within a
// process, and an end read from a shared store lasts its length at most,
// so a stepped wall clock never stretches them.
//
// # Stores
//
// MemoryStore (this package) serves one process; it holds at most
// MaxSubjects evictable subjects (100,000 by default), evicting the least
// recently used address, never a key or a subject with a ban, strikes or
// a full window. While the limiter is three quarters full, IPv6 clients
// are counted per /48 instead of per /64. adapters/redislimit shares
// counters and bans between processes, and caps the addresses it keeps.
// adapters/limiterstore builds the per-request step on any
// ulule/limiter/v3 store, at one call per window plus the ban check. All
// of them pass the ratelimittest suite.
package ratelimit
