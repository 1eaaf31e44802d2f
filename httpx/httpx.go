package httpx

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
)

// Config configures the /v1 API handler.
type Config struct {
	Service        petstore.PetService    // required
	Auth           petstore.Authenticator // required
	Logger         *slog.Logger           // nil: discard
	BasePath       string                 // where the API is mounted; default "/v1" (e.g. "/api/v1")
	Limiter        RateLimiter            // nil: no rate limiting
	TrustedProxies []netip.Prefix         // X-Forwarded-For is honoured only from these peers
	DeprecatedAt   time.Time              // getPet's Deprecation date; zero: 2026-01-01T00:00:00Z
	Now            func() time.Time       // nil: time.Now

	// IETFRateLimitHeaders adds the IETF draft's RateLimit-Policy and
	// RateLimit headers (draft-ietf-httpapi-ratelimit-headers), which
	// describe every window, to the X-RateLimit-* headers of the binding
	// one. Off by default: the draft is not final, and the two headers
	// take a page of pets from seven header fields to nine, past the
	// eight a Go map holds without growing, which more than doubles what
	// net/http spends on them (about 3.5 µs and eight allocations more an
	// answer, BenchmarkHeaderFields).
	IETFRateLimitHeaders bool

	// AccessLog writes the access log, a line per request; nil: the
	// line ("request", at Info) goes to Logger. NewJSONAccessLog and
	// NewTextAccessLog write the very line Logger's built-in JSON or text
	// handler would, at a fraction of slog's cost.
	AccessLog AccessLogger

	// Timeout bounds each request's waits on the stores behind it
	// (authentication, the operation, Idempotency-Key records): past it
	// the request is 503 unavailable with Retry-After instead of hanging
	// on a database that stopped answering. Zero: no bound but the
	// client's own.
	Timeout time.Duration

	// PublicBudgetPaths are paths whose requests are authenticated but
	// spend their address's public budget (PublicLimits), never the key's,
	// and are never refused for the key's ban: a report a key must be able
	// to read after it ran out (the dashboard's usage). Used by Wrap.
	PublicBudgetPaths []string

	// PublicLimits are the per-address allowances of the paths that need
	// no key (the OpenAPI document); zero: DefaultPublicLimits. Requests
	// with a wrong or missing key have their own budget, the Free plan's.
	PublicLimits petstore.Limits

	// Idempotency keeps Idempotency-Key records, making POST /pets safe
	// to retry; nil: the header is ignored.
	Idempotency petstore.IdempotencyStore

	// Orders serves the store orders operations (beta) under
	// /store/orders, each for the project of the caller's key; nil: those
	// paths answer 404 like any unknown path and the OpenAPI document
	// leaves them out.
	Orders petstore.OrderService

	// Metrics receives the request, rate-limit, store-error and
	// Idempotency-Key replay metrics (see metrics.go's list); nil: nothing
	// is measured, at no cost. Nothing is registered globally.
	Metrics prometheus.Registerer

	// TracerProvider receives a span per request, following
	// OpenTelemetry's HTTP server conventions (named "GET /v1/pets" after
	// the route, a child of the caller's span when the request carries a
	// W3C traceparent), with a child span per call to the ports above:
	// authentication, the rate limiter's decision, the pets and orders
	// services and the Idempotency-Key store (see package tracing). nil:
	// no spans, at no cost. The global provider is never used.
	TracerProvider trace.TracerProvider
}

// MaxBodyBytes is the largest request body accepted; larger ones are 413.
const MaxBodyBytes = 1 << 20

// DefaultDeprecatedAt is the default Deprecation date of getPet.
var DefaultDeprecatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sunset is when getPet is removed, from the spec (RFC 8594 Sunset header).
var Sunset = time.Date(2030, 12, 5, 0, 0, 0, 0, time.UTC)

// api is the /v1 handler behind the chain: the router and the operations.
type api struct {
	svc         petstore.PetService
	base        string
	openapi     []byte
	openapiETag string
	// getPet's deprecation headers' values, made once: Deprecation,
	// Sunset and the successor Link. They are shared by every answer
	// and never modified (each has capacity 1, so an Add copies).
	deprec, sunset, successor []string

	// Route patterns for the log, made once; GET and HEAD each have their
	// own (index 0 and 1, see getOrHead).
	patList, patDoc, patPet [2]string
	patCreate               string
	petsPath                string // base + "/pets", for Link headers

	// create answers POST /pets once the body passed the media type and
	// size checks and was decoded. It is a field so that New can wrap it
	// in Idempotency-Key replay when Config.Idempotency is set.
	create decodedHandler[petstore.NewPet]

	orders *orderRoutes // nil without Config.Orders

	router *Router // every path under the base, on ServeMux patterns
}

// New returns the handler of the whole API under cfg.BasePath. Mount it
// without stripping the prefix, e.g. mux.Handle("/v1/", h) on a ServeMux,
// mux.Handle("/api/v1/", h) with BasePath "/api/v1", or r.Mount("/v1", h)
// on chi: it routes on the full request path.
func New(cfg Config) (http.Handler, error) {
	cfg = traceConfig(cfg)
	if cfg.Service == nil {
		return nil, errors.New("httpx: Config.Service is required")
	}
	base, err := cleanBase(cfg.BasePath)
	if err != nil {
		return nil, err
	}
	doc, err := openAPIDocument(base, cfg.Orders != nil)
	if err != nil {
		return nil, err
	}
	at := cfg.DeprecatedAt
	if at.IsZero() {
		at = DefaultDeprecatedAt
	}
	a := &api{svc: cfg.Service, base: base, openapi: doc, deprec: []string{"@" + itoa(at.Unix())}, sunset: []string{Sunset.Format(http.TimeFormat)}, patCreate: "POST " + base + "/pets", petsPath: base + "/pets", openapiETag: ETag(doc)}
	a.successor = []string{"<" + base + `/pets>; rel="successor-version"`}
	for i, m := range []string{http.MethodGet, http.MethodHead} {
		a.patList[i] = m + " " + base + "/pets"
		a.patPet[i] = m + " " + base + "/pets/{petId}"
		a.patDoc[i] = m + " " + base + "/openapi.json"
	}
	a.create = createPet{a}
	if cfg.Idempotency != nil {
		a.create = newIdempotent(cfg.Idempotency, cfg.Now, a.create)
	}
	if cfg.Orders != nil {
		a.orders = newOrderRoutes(cfg, base)
	}
	a.routes()
	openapiPath := base + "/openapi.json"
	c, err := newChain(cfg, a, func(r *http.Request) bool { return r.URL.Path == openapiPath })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// cleanBase normalises the base path: "" is "/v1", a trailing slash is
// dropped, and "/" mounts the API at the root.
func cleanBase(p string) (string, error) {
	if p == "" {
		return "/v1", nil
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#{} ") || strings.Contains(p, "//") {
		return "", errors.New(`httpx: BasePath must be an absolute path such as "/v1"`)
	}
	return strings.TrimSuffix(p, "/"), nil
}

// routes registers every operation of the API on its router, each GET
// pattern with its HEAD twin (RFC 9110 §9.3.2: the same status and
// headers, without the body, which ServeHTTP drops), a method-less pattern
// per path that answers 405 with Allow, and 404 for everything else.
func (a *api) routes() {
	a.router = NewRouter()
	for i := range 2 { // GET, then HEAD
		a.operation(a.patList[i], a.handleListPets, false, false)
		a.operation(a.patPet[i], a.handleGetPet, false, false)
		a.operation(a.patDoc[i], a.handleOpenAPI, false, false)
	}
	a.operation(a.patCreate, a.handleCreatePet, true, false)
	a.router.Refuse(a.base+"/pets", "GET, HEAD, POST", nil)
	a.router.Refuse(a.base+"/pets/{petId}", "GET, HEAD", nil)
	a.router.Refuse(a.base+"/openapi.json", "GET, HEAD", nil)
	if o := a.orders; o != nil {
		for i := range 2 {
			a.operation(o.patList[i], o.handleList, false, true)
			a.operation(o.patOrder[i], o.handleGet, false, true)
		}
		a.operation(o.patCreate, o.handleCreate, true, true)
		a.router.Refuse(o.path, "GET, HEAD, POST", markBeta)
		a.router.Refuse(o.path+"/{orderId}", "GET, HEAD", markBeta)
	}
	a.router.Refuse("/", "", nil)
	if a.base != "" {
		a.router.Refuse(a.base+"/", "", nil)
		a.router.Refuse(a.base, "", nil)
	}
}

// markBeta marks an answer as beta (X-API-Stability), as every answer of
// a beta operation's path is.
func markBeta(w http.ResponseWriter) { w.Header()["X-Api-Stability"] = stabilityBeta }

// operation registers handle under pattern: it takes a JSON body (checked
// for media type, coding and size first) when body is set, and is beta
// when beta is.
func (a *api) operation(pattern string, handle http.HandlerFunc, body, beta bool) {
	a.router.Handle(pattern, func(w http.ResponseWriter, r *http.Request) {
		if beta {
			markBeta(w)
		}
		if body {
			if _, err := ReadBody(w, r); err != nil {
				WriteError(w, r, err)
				return
			}
		}
		handle(w, r)
	})
}

// ServeHTTP routes a request that already passed authentication and rate
// limiting.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		w = headWriter{w}
	}
	a.router.ServeHTTP(w, r)
}

// headWriter answers a HEAD request: headers and status pass through,
// the body is dropped. net/http's server drops it too, but not every
// ResponseWriter a handler meets (a recorder, a proxy) does. WriteJSON
// sets Content-Length, so HEAD announces the length GET would send.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuseUnrouted answers a request that match did not route, in JSON as
// every answer under the base is: 404 when no route has the path, 405 with
// Allow when the path's routes lack the method. It reports whether it
// answered.
func refuseUnrouted(w http.ResponseWriter, r *http.Request, ok bool, allow string) bool {
	switch {
	case !ok:
		WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s", r.URL.Path))
		return true
	case allow != "":
		w.Header().Set("Allow", allow)
		WriteError(w, r, petstore.Errorf(petstore.CodeMethodNotAllowed, "method %s is not allowed here; use %s", r.Method, allow))
		return true
	}
	return false
}

// ReadBody enforces the JSON media type and an identity content coding
// (415) and the size limit (413), then returns the bytes read and replaces
// r.Body with them, so the operation and any wrapper around it can read
// them again.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if !isJSON(r.Header.Get("Content-Type")) {
		return nil, petstore.Errorf(petstore.CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	if !isIdentity(r.Header.Values("Content-Encoding")) {
		return nil, petstore.Errorf(petstore.CodeUnsupportedMediaType, "Content-Encoding is not supported; send the body uncompressed (identity)")
	}
	tooLarge := petstore.Errorf(petstore.CodePayloadTooLarge, "body must be at most 1 MiB")
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, petstore.Errorf(petstore.CodeInvalidRequest, "could not read the body")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// isIdentity reports whether a request's Content-Encoding values name no
// coding but identity. Request bodies are never decompressed (RFC 9110
// §8.4: 415 for a coding the server does not accept), and a body labelled
// br but sent plain is refused too rather than read as if unlabelled.
func isIdentity(values []string) bool {
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return false
			}
		}
	}
	return true
}

// isJSON accepts application/json with no charset or with UTF-8, the only
// encoding JSON allows (RFC 8259 §8.1).
func isJSON(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}
