// Package httpx serves the Petstore /v1 API over HTTP: an http.Handler
// that mounts on any mux (the standard library's ServeMux, under a prefix
// such as /api/v1, or chi) and answers every path under its base with JSON
// Error bodies.
//
// Every request passes the same steps, each a plain
// func(http.Handler) http.Handler: a request id, the access log, tracing,
// metrics, panic recovery, the bearer key (401 once the try was charged
// to the client's address), the rate limiter (429, and the X-RateLimit-*
// headers on every answer), which Wrap puts in front of a handler of
// your own too; then the route (404, or 405 with Allow), the media type
// (415), the size (413), the body (400), and the operation. The OpenAPI
// document at <base>/openapi.json needs no key.
//
// Every page and pet has a strong ETag; a 304 spends only the key's
// conditional allowance (ConditionalLimits). Config.Cache keeps encoded
// pages and pets until a create. A 503 from a store spends no quota.
//
// Package httpx/dashboard and httpx/edge build on the exported pieces
// (Wrap, Router, ReadBody, DecodeObject, WriteError, WriteJSON); the docs
// directory describes the limits and retries in full.
package httpx
