package httpx

import (
	"bytes"
	"cmp"
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
	"github.com/petstorekit/petstore/internal/strictjson"
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
	// RateLimit headers, for every window; off: the draft is not final.
	IETFRateLimitHeaders bool

	// AccessLog receives the access log, a "request" line at Info per
	// request, whose fields docs/operating.md#logs lists; nil: Logger
	// does.
	AccessLog *slog.Logger

	// Cache keeps the encoded pages and pets until a create changes them
	// (see Cache); nil: every read asks the store and encodes.
	Cache *Cache

	// Timeout bounds each request's waits on the stores behind it: past
	// it the request is 503 unavailable with Retry-After instead of
	// hanging on a database that stopped answering. Zero: no bound.
	Timeout time.Duration

	// PublicBudgetPaths are authenticated paths that spend the address's
	// public budget, never the key's: a report a key must read after it
	// ran out or was banned (the dashboard's usage).
	PublicBudgetPaths []string

	// PublicLimits are the per-address allowances of the paths that need
	// no key (the OpenAPI document); zero: DefaultPublicLimits. Requests
	// with a wrong or missing key have their own budget, the Free plan's.
	PublicLimits petstore.Limits

	// Idempotency keeps Idempotency-Key records, making POST /pets and
	// POST /store/orders safe to retry; nil: the header is ignored.
	Idempotency petstore.IdempotencyStore

	// Orders serves the store orders operations (beta) under
	// /store/orders, for the project of the caller's key; nil: those
	// paths are 404 and the OpenAPI document leaves them out.
	Orders petstore.OrderService

	// Metrics receives the API's metrics, which docs/operating.md#metrics
	// lists; nil: none.
	Metrics prometheus.Registerer

	// TracerProvider receives a span per request, with a child span per
	// call to the ports above (package tracing; docs/operating.md#traces
	// lists their attributes); nil: no spans. The global provider is
	// never used.
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
	Config             // traced (traceConfig); Orders nil: no orders
	base        string // Config.BasePath, cleaned
	petsPath    string // base + "/pets", for Link headers
	ordersPath  string // base + "/store/orders"
	openapi     []byte
	openapiETag string
	deprecation [3]string // getPet's Deprecation, Sunset and successor Link

	// petCreator and orderCreator create a decoded pet or order, wrapped
	// in Idempotency-Key replay when Config.Idempotency is set.
	petCreator   creation[petstore.NewPet]
	orderCreator creation[petstore.NewOrder]

	*Router // every path under the base, on ServeMux patterns
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
	doc, err := openAPIDocument(base, cfg.Orders != nil, cfg.Idempotency != nil)
	if err != nil {
		return nil, err
	}
	at := cfg.DeprecatedAt
	if at.IsZero() {
		at = DefaultDeprecatedAt
	}
	a := &api{Config: cfg, base: base, petsPath: base + "/pets", ordersPath: base + ordersPath, openapi: doc, openapiETag: ETag(doc), deprecation: [3]string{"@" + itoa(at.Unix()), Sunset.Format(http.TimeFormat), "<" + base + `/pets>; rel="successor-version"`}}
	a.petCreator = idempotently(cfg, a.createPet, true)
	a.orderCreator = idempotently(cfg, a.createOrder, false)
	a.routes()
	openapiPath := base + "/openapi.json"
	h, err := newChain(cfg, a, func(r *http.Request) bool { return r.URL.Path == openapiPath })
	if err != nil || a.Orders == nil {
		return h, err
	}
	return betaUnder(a.ordersPath, h), nil
}

// betaUnder marks every answer on path and path/{id} as beta
// (X-API-Stability), before the chain, so that their 401, 429 and 503
// carry it too.
func betaUnder(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, path)
		if ok && (rest == "" || len(rest) > 1 && rest[0] == '/' && !strings.Contains(rest[1:], "/")) {
			w.Header().Set(StabilityHeader, StabilityBeta)
		}
		next.ServeHTTP(w, r)
	})
}

// cleanBase normalises the base path: "" is "/v1", a trailing slash is
// dropped, and "/" mounts the API at the root.
func cleanBase(p string) (string, error) {
	p = cmp.Or(p, "/v1")
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#{} ") || strings.Contains(p, "//") {
		return "", errors.New(`httpx: BasePath must be an absolute path such as "/v1"`)
	}
	return strings.TrimSuffix(p, "/"), nil
}

// routes registers every operation, each GET with its HEAD twin (RFC
// 9110 §9.3.2), a method-less pattern per path that answers 405 with
// Allow, and 404 for everything else.
func (a *api) routes() {
	a.Router = NewRouter()
	get := func(path string, op func(http.ResponseWriter, *http.Request) error) {
		h := func(w http.ResponseWriter, r *http.Request) {
			if err := op(w, r); err != nil {
				WriteError(w, r, err)
			}
		}
		a.Handle("GET "+path, h)
		a.Handle("HEAD "+path, h)
	}
	get(a.petsPath, a.listPets)
	get(a.petsPath+"/{petId}", a.getPet)
	get(a.base+"/openapi.json", func(w http.ResponseWriter, r *http.Request) error {
		ServeDocument(w, r, a.openapi, a.openapiETag) // with this mount's base path
		return nil
	})
	handlePost(a.Router, a.petsPath, strictjson.NewPet, a.petCreator)
	a.Refuse(a.petsPath, "GET, HEAD, POST", nil)
	a.Refuse(a.petsPath+"/{petId}", "GET, HEAD", nil)
	a.Refuse(a.base+"/openapi.json", "GET, HEAD", nil)
	if a.Orders != nil {
		get(a.ordersPath, a.listOrders)
		get(a.ordersPath+"/{orderId}", a.getOrder)
		handlePost(a.Router, a.ordersPath, decodeOrder, a.orderCreator)
		a.Refuse(a.ordersPath, "GET, HEAD, POST", nil)
		a.Refuse(a.ordersPath+"/{orderId}", "GET, HEAD", nil)
	}
	a.Refuse("/", "", nil)
	if a.base != "" {
		a.Refuse(a.base+"/", "", nil)
		a.Refuse(a.base, "", nil)
	}
}

// handlePost registers POST path: the body is read (ReadBody) and decoded
// once, and the value handed to create, the operation or the
// Idempotency-Key wrapper that hashes exactly that value.
func handlePost[T any](rt *Router, path string, decode func([]byte) (T, error), create creation[T]) {
	rt.Handle("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		body, err := ReadBody(w, r)
		var v T
		if err == nil {
			v, err = decode(body)
		}
		if err != nil {
			WriteError(w, r, err)
			return
		}
		create(w, r, v)
	})
}

// ServeHTTP routes a request that passed the chain.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		w = headWriter{w}
	}
	a.Router.ServeHTTP(w, r)
}

// headWriter drops a HEAD answer's body, which not every ResponseWriter
// (a recorder, a proxy) drops as net/http's server does.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ReadBody enforces the JSON media type, in one Content-Type header, and
// an identity content coding (415) and the size limit (413), then returns
// the bytes read and replaces r.Body with them, so the operation and any
// wrapper around it can read them again.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if len(r.Header.Values("Content-Type")) > 1 {
		// A singleton field (RFC 9110 §8.3): which of two a proxy or a
		// reader takes is not defined, so neither is taken.
		return nil, petstore.Errorf(petstore.CodeUnsupportedMediaType, "send exactly one Content-Type header, application/json")
	}
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

// DecodeObject decodes exactly one JSON object from body into v by the
// /v1 API's rules (strictjson.Decode); any failure is invalid_request.
func DecodeObject(body []byte, v any) error { return strictjson.Decode(body, v) }

// isIdentity reports whether a request's Content-Encoding values name no
// coding but identity: bodies are never decompressed (RFC 9110 §8.4).
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
