// Package httpx serves the Petstore /v1 API over HTTP: an http.Handler
// that mounts on any mux (the standard library's ServeMux, under a prefix
// such as /api/v1, or chi) and answers every path under its base with JSON
// Error bodies.
//
// Every request passes the same steps, each a plain
// func(http.Handler) http.Handler chained in newChain: a request id is
// assigned, the access log, tracing and metrics wait for the answer,
// panics are recovered, the bearer key is authenticated, the rate limiter
// decides, then the route is matched (404, or 405 with Allow), the media
// type (415), the size (413) and the body (400) are checked, and only then
// does the operation run. A request without a valid key is therefore 401
// on any path, after its try was charged to its client address. The
// OpenAPI document at <base>/openapi.json needs no key.
//
// # Rate limits
//
// Config.Limiter decides on every request (see RateLimiter for whose
// budget each spends), so every response, errors included, reports the
// binding window in X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset, and with Config.IETFRateLimitHeaders every window in
// the IETF draft's RateLimit-Policy and RateLimit. A refusal is 429 with
// Retry-After, code rate_limited or, while a ban lasts, api_key_banned. A
// key store or a rate limiter that cannot answer is 503 unavailable,
// charged to nobody; so is a request a store failed (the limiter gives it
// back when it is a Refunder).
//
// # Conditional requests
//
// Every page and pet carries a strong ETag; a GET or HEAD whose
// If-None-Match names it is 304 Not Modified, with no body. A key's
// conditional requests spend a separate allowance, ConditionalLimits (ten
// times its plan's); one answered 304 spends none of the plan's quota, one
// answered in full spends it too. Config.Cache keeps the encoded pages and
// pets until a create changes them.
//
// # Retries
//
// Config.Idempotency makes POST /pets and POST /store/orders safe to
// retry with an Idempotency-Key: a repeat with the same key and body
// within 24 hours gets the first response again, with
// Idempotent-Replayed: true.
//
// # Building blocks
//
// Package httpx/dashboard (the Domains dashboard) and httpx/edge (routing
// by Host) use the exported pieces: Wrap puts any handler behind the same
// chain; Router routes on ServeMux patterns with JSON 404 and 405;
// ReadBody and DecodeObject read bodies by the API's rules; ServeDocument
// serves an OpenAPI document; KeyFromContext and RequestIDFromContext read
// what the chain found; WriteError and WriteJSON write responses in the
// API's shape. Give the dashboard the same Limiter as /v1 so that a key's
// requests to both count together.
package httpx
