package httpx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/statuswriter"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/tracing"
)

// RateLimiter decides on each request. subject says whose budget the
// request spends:
//   - "key:<APIKey.ID>" for a request with a valid key (limits =
//     key.EffectiveLimits()): a valid key is always decided by its own
//     plan, whoever else shares its address;
//   - "ip:<client address>" for a request whose key is missing or invalid
//     (limits = the Free plan's): only such attempts spend it, so one bad
//     client behind a shared address (a NAT, an office proxy) never locks
//     out the valid keys behind it;
//   - "pub:<client address>" for a public path such as the OpenAPI
//     document (limits = Config.PublicLimits, generous by default).
//
// An IPv6 client is counted per /64 ("ip:2001:db8::/64"). Implementations
// must be safe for concurrent use and honour context cancellation. An
// error answers the request 503 unavailable: failing open or closed when
// the counter store is down is the limiter's decision, not httpx's.
type RateLimiter interface {
	Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error)
}

// DefaultPublicLimits are the per-address allowances of public paths (the
// OpenAPI document, the dashboard page and its assets) when
// Config.PublicLimits is zero: enough for a person reloading pages all
// day, small enough to stop a flood.
var DefaultPublicLimits = petstore.Limits{PerMinute: 600, PerDay: 20_000}

// unavailableRetryAfter is the Retry-After of a 503: a dependency that is
// down is usually back within seconds, and the key cache serves a key
// again within one of the store's return.
const unavailableRetryAfter = "2"

// requestInfo is what the chain learns about one request. It is also the
// request's context (the parent's, plus itself as a value), and holds the
// request the handlers get, the status writer and the backing arrays of
// the headers the chain sets, so that one allocation serves what used to
// take nine. Its fields are ordered so that it fits a 768-byte size class
// (TestRequestInfoFitsItsSizeClass).
type requestInfo struct {
	context.Context
	// req is the request with this as its context, what r.WithContext
	// would allocate apart.
	req     http.Request
	sw      statuswriter.Writer
	id      string
	logger  *slog.Logger
	key     petstore.APIKey
	route   string
	outer   string      // r.Pattern as the chain got it, from an outer ServeMux
	addr    netip.Addr  // the client address, once the chain computed it
	cause   int         // why a store failed the request (causeNone, ...)
	span    trace.Span  // the request's span; nil without Config.TracerProvider
	start   time.Time   // when the chain got the request
	outages *outageLogs // the chain's rate-limited log slots of dependency 503s
	// authErr is the unauthorized error of a missing or wrong key, which
	// the rate limiter answers once it charged the attempt.
	authErr error

	// The backing of the values of headers the chain and the pets
	// handlers set, so that setting them allocates nothing: see slot.
	vals  [valSlots]string
	idBuf [36]byte // a generated request id's text

	hasKey bool // key is the request's authenticated key
	public bool // a public path: no key is asked for
	// unrouted marks a request the API refused for its path or method
	// (404, 405): it has no route, whatever pattern the mux matched.
	unrouted bool
}

// headerValue returns v as the one value of a header, backed by info's
// slot i behind the chain, else by a new slice.
func headerValue(info *requestInfo, i int, v string) []string {
	if info == nil {
		return []string{v}
	}
	return info.slot(i, v)
}

// Slots of requestInfo.vals.
const (
	slotRequestID     = 0
	slotRateLimit     = 1 // five: X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy, RateLimit
	slotLink          = 6
	slotContentLength = 7
	valSlots          = 8
)

// slot stores v as the one value of a header and returns the header's
// value slice, backed by info.
func (ri *requestInfo) slot(i int, v string) []string {
	ri.vals[i] = v
	return ri.vals[i : i+1 : i+1]
}

type infoKey struct{}

// Value makes requestInfo the context that carries itself.
func (ri *requestInfo) Value(k any) any {
	if _, ok := k.(infoKey); ok {
		return ri
	}
	return ri.Context.Value(k)
}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

// KeyFromContext returns the API key that authenticated the request, as
// set by the chain of New or Wrap. It reports false for a public path.
func KeyFromContext(ctx context.Context) (petstore.APIKey, bool) {
	if info := infoFrom(ctx); info != nil && info.hasKey {
		return info.key, true
	}
	return petstore.APIKey{}, false
}

// RequestIDFromContext returns the request's id, the value of its
// X-Request-Id response header, or "" outside the chain.
func RequestIDFromContext(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// chain is the shared front of every API: request id, logging, recovery,
// authentication and rate limiting, in that order.
type chain struct {
	auth    petstore.Authenticator
	logger  *slog.Logger
	access  AccessLogger // nil: Logger's Info lines, when enabled
	ietf    bool         // Config.IETFRateLimitHeaders
	limiter RateLimiter
	proxies []netip.Prefix
	now     func() time.Time
	public  func(r *http.Request) bool
	pubLim  petstore.Limits
	timeout time.Duration
	next    http.Handler
	metrics *metrics                   // nil: nothing measured
	routeOf func(*http.Request) string // the route of a request refused before routing
	outages outageLogs                 // rate-limited log lines of dependency 503s
	tracer  trace.Tracer               // nil: no spans

	// offBudget marks authenticated requests that spend their address's
	// public budget instead of the key's: the dashboard's usage report,
	// which a key that used up its budget, or is banned, must still see.
	offBudget func(r *http.Request) bool
}

func newChain(cfg Config, next http.Handler, public func(*http.Request) bool) (*chain, error) {
	if cfg.Auth == nil {
		return nil, errors.New("httpx: Config.Auth is required")
	}
	c := &chain{auth: cfg.Auth, logger: cfg.Logger, access: cfg.AccessLog, ietf: cfg.IETFRateLimitHeaders, limiter: cfg.Limiter, proxies: cfg.TrustedProxies, now: cfg.Now, public: public, pubLim: cfg.PublicLimits, timeout: cfg.Timeout, next: next}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.metrics, err = newMetrics(cfg.Metrics); err != nil {
		return nil, fmt.Errorf("httpx: Config.Metrics: %w", err)
	}
	c.routeOf = routerOf(next)
	if len(cfg.PublicBudgetPaths) > 0 {
		paths := make(map[string]bool, len(cfg.PublicBudgetPaths))
		for _, p := range cfg.PublicBudgetPaths {
			paths[p] = true
		}
		c.offBudget = func(r *http.Request) bool { return paths[r.URL.Path] }
	}
	if cfg.TracerProvider != nil {
		c.tracer = tracing.Tracer(cfg.TracerProvider)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.public == nil {
		c.public = func(*http.Request) bool { return false }
	}
	if c.pubLim == (petstore.Limits{}) {
		c.pubLim = DefaultPublicLimits
	} else if !c.pubLim.Valid() {
		return nil, errors.New("httpx: Config.PublicLimits must be positive, with per day >= per minute")
	}
	return c, nil
}

// Wrap puts next behind the same chain as the /v1 API: X-Request-Id,
// request logging, panic recovery (500 Error body), bearer authentication
// (401) and rate limiting (429, 503), with JSON Error bodies throughout.
// Requests whose URL path is one of publicPaths skip authentication and
// spend their address's public budget (Config.PublicLimits). cfg.Service
// and cfg.BasePath are not used. Inside next, KeyFromContext returns the
// authenticated key. When next is an http.ServeMux its matched pattern is
// logged as the route.
func Wrap(cfg Config, next http.Handler, publicPaths ...string) (http.Handler, error) {
	public := make(map[string]bool, len(publicPaths))
	for _, p := range publicPaths {
		public[p] = true
	}
	return newChain(traceConfig(cfg), next, func(r *http.Request) bool { return public[r.URL.Path] })
}

var freeLimits, _ = petstore.PlanFree.Limits()

// requestID keeps a client's own id when it is a sane token, so a caller
// can correlate its logs with ours, and otherwise makes a UUID v7 of now
// in buf.
func requestID(client string, buf *[36]byte, now time.Time) string {
	if n := len(client); n > 0 && n <= 128 {
		ok := true
		for i := 0; i < n && ok; i++ {
			ch := client[i]
			ok = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-'
		}
		if ok {
			return client
		}
	}
	newUUIDv7(buf, now)
	// The id is the text in buf, which is written once, here, and lives
	// as long as the requestInfo holding it: no copy is needed.
	return unsafe.String(&buf[0], len(buf))
}

// newUUIDv7 makes an RFC 9562 version 7 UUID: 48 bits of Unix
// milliseconds, then 74 random bits. The random bits come from
// math/rand/v2's per-thread ChaCha8 rather than crypto/rand, whose
// getrandom call on every request cost more than the rest of the id: a
// request id must be unique and hard to predict, not a secret.
func newUUIDv7(s *[36]byte, now time.Time) {
	var u [16]byte
	binary.BigEndian.PutUint64(u[0:8], uint64(now.UnixMilli())<<16|rand.Uint64()&0xffff)
	binary.BigEndian.PutUint64(u[8:16], rand.Uint64())
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // variant 10
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[b>>4], hexDigits[b&0xf]
		j += 2
	}
}
