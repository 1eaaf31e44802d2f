// Package httpx serves the Petstore /v1 API over HTTP: an http.Handler
// that mounts on any mux (the standard library's ServeMux, under a prefix
// such as /api/v1, or chi) and answers every path under its base with JSON
// Error bodies.
//
// Every request passes the same steps, in this order: a request id is
// assigned, the bearer key is authenticated, the rate limiter decides,
// then the route is matched (404, or 405 with Allow), the media type
// (415), the size (413) and the body (400) are checked, and only then does
// the operation run. A request without a valid key is therefore 401 on any
// path, after being rate limited by client address. The OpenAPI document
// at <base>/openapi.json needs no key.
//
// # Rate limits
//
// Config.Limiter (a *ratelimit.Limiter; nil turns limiting off) decides on
// every request, so every response, errors included, reports the limits:
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix
// seconds, rounded up) for the binding window, the one with the fewest
// requests left (on a 429, the one that refused). With
// Config.IETFRateLimitHeaders, the IETF draft headers describe both
// windows too; for a fresh Free key:
//
//	RateLimit-Policy: "minute";q=60;w=60, "day";q=1000;w=86400
//	RateLimit: "minute";r=59;t=60, "day";r=999;t=86400
//
// Seconds are counted from the limiter's clock, the one its windows were
// measured with. A refused request is 429 with Retry-After in whole
// seconds and code rate_limited, or api_key_banned while a ban lasts (then
// X-RateLimit-Remaining is 0 and X-RateLimit-Reset the ban's end).
// A request with a valid key is always decided by its key, at the key's
// plan as it is now, whoever shares its address. A request whose key is
// missing or wrong spends its client address's budget of attempts, at the
// Free plan's figures, with strikes and bans of its own: only such
// attempts consume it, so one bad client behind a NAT or an office proxy
// never locks out the valid keys behind it (what stops guessing is the
// key space: 256 random bits). Public paths (the OpenAPI document, and the
// dashboard page and its assets under Wrap) spend a third, generous
// per-address budget, Config.PublicLimits. IPv6 clients are counted per
// /64. When the key store cannot answer (a database outage), the request
// is 503 unavailable with Retry-After and is charged to nobody: an
// unavailable store is not an invalid key. X-Forwarded-For
// names the client only when the peer is in Config.TrustedProxies. When
// the limiter's store is slow or down, the request is decided by the
// limiter's local fallback with the same limits, and sent without
// rate-limit headers (its figures are this process's only); a limiter that
// fails closed answers 503 unavailable instead while the store is
// unreachable.
//
// # Retries
//
// Config.Idempotency (a petstore.IdempotencyStore; nil ignores the
// header) makes POST /pets safe to retry: a repeat with the same
// Idempotency-Key and body within 24 hours gets the first response again,
// with Idempotent-Replayed: true, instead of creating a second pet; the
// same key with another body is 422 idempotency_key_reused, and while the
// first request still runs, 409 idempotency_key_in_use. Keys are scoped to
// the API key, and 5xx answers are not kept, so a retry after one runs
// again. Bodies are compared as the pet they describe, so a retry that
// re-serializes its JSON is the same request. A claim left in flight by a
// process that died is taken over by a retry once it is older than
// petstore.IdempotencyLease (2 minutes). With a shared store (bunstore)
// this holds across processes.
//
// # The dashboard and custom domains
//
// The rest of a platform lives beside it: package httpx/dashboard is the
// Domains dashboard (page and beta JSON API), and package httpx/edge sits
// in front of everything and routes by Host.
//
// The building blocks of the chain are exported so that other APIs of the
// same server (the dashboard API) behave the same way: Wrap puts any
// handler behind the same request id, logging, panic recovery,
// authentication and rate limiting; Router routes on ServeMux patterns with
// JSON 404 and 405; ReadBody and DecodeObject read bodies by the API's
// rules; ServeDocument serves an OpenAPI document; KeyFromContext and
// RequestIDFromContext read what the chain found; WriteError and WriteJSON
// write responses in the API's shape. Give the dashboard the same Limiter
// as /v1 so that a key's requests to both count together.
package httpx
