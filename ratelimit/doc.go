// Package ratelimit decides whether a request may proceed under its plan's
// limits: two fixed windows (a minute and a day) per key, and temporary bans
// for clients that keep sending after a 429. It holds no HTTP and no Redis:
// counters live behind a small Store interface with in-memory and Redis
// adapters, and httpx turns a Decision into headers.
package ratelimit
