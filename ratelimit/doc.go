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
// # When the store fails
//
// Every store call is bounded by Config.StoreTimeout (1 s by default).
// A Limiter over a shared store keeps a local MemoryStore that mirrors
// every shared answer. When a call fails, times out or panics, that local
// store decides with the same limits, starting from the last shared
// figures: over-admission is bounded by the number of processes, never
// unlimited, and known bans and full windows stay in force. Such decisions
// carry Decision.Degraded (no rate-limit headers then: the figures are
// this process's only). After Config.BreakerFailures failures in a row
// with no success for a StoreTimeout, the store is taken for down and only
// probed once per Config.BreakerCooldown. Failing closed
// (Config.FailClosed) returns an unavailable error (503) only while the
// store is unreachable: taken for down, or refusing connections; a call
// that merely timed out is decided locally. An outage is logged when it
// starts (then at most once per Config.LogInterval) and when it ends,
// without the subject, and Limiter.Status reports it for a readiness
// check.
//
// # Stores
//
// MemoryStore (this package) serves one process; it holds at most
// MaxSubjects subjects (100,000 by default), evicting the least recently
// used, so a flood of new addresses costs bounded memory. adapters/redislimit shares
// counters and bans between processes in one Lua script per decision (one
// round trip). adapters/limiterstore builds the same step on any
// ulule/limiter/v3 store, at one call per window plus the ban check. All
// of them pass the ratelimittest suite.
package ratelimit
