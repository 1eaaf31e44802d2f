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
// The building blocks of that chain are exported so that other APIs of
// the same server (the dashboard API) behave the same way: Wrap puts any
// handler behind the same request id, logging, panic recovery,
// authentication and rate limiting; KeyFromContext and
// RequestIDFromContext read what the chain found; WriteError and WriteJSON
// write responses in the API's shape.
package httpx
