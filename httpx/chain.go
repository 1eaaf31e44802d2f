package httpx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
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
// status writer and the backing arrays of the headers the chain sets, so
// that one allocation serves what used to take eight.
type requestInfo struct {
	context.Context
	sw     statuswriter.Writer
	id     string
	logger *slog.Logger
	key    petstore.APIKey
	hasKey bool
	route  string
	outer  string     // r.Pattern as the chain got it, from an outer ServeMux
	addr   netip.Addr // the client address, once the chain computed it
	cause  int        // why a store failed the request (causeNone, ...)
	span   trace.Span // the request's span; nil without Config.TracerProvider
	// unrouted marks a request the API refused for its path or method
	// (404, 405): it has no route, whatever pattern the mux matched.
	unrouted bool
	// outages are the chain's rate-limited log slots of dependency 503s.
	outages *outageLogs

	// The backing of the values of headers the chain and the pets
	// handlers set, so that setting them allocates nothing: see slot.
	vals  [valSlots]string
	idBuf [36]byte // a generated request id's text

	// text is one header value's text written by a handler (the Link of
	// a page), see textBuf.
	text  [192]byte
	clBuf [20]byte // the Content-Length's text
}

// textBuf returns a buffer for one header value's text: the request's own
// behind the chain, used once per request, else a new one.
func textBuf(info *requestInfo) []byte {
	if info == nil {
		return make([]byte, 0, 192)
	}
	return info.text[:0]
}

// textValue turns text appended to textBuf(info) into a header's value
// slice, without copying it when it stayed in the request's buffer.
func textValue(info *requestInfo, slot int, text []byte) []string {
	if info == nil || len(text) == 0 {
		return []string{string(text)}
	}
	if &text[0] != &info.text[0] {
		return info.slot(slot, string(text)) // it outgrew the buffer
	}
	return info.slot(slot, unsafe.String(&text[0], len(text)))
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
	c := &chain{auth: cfg.Auth, logger: cfg.Logger, limiter: cfg.Limiter, proxies: cfg.TrustedProxies, now: cfg.Now, public: public, pubLim: cfg.PublicLimits, timeout: cfg.Timeout, next: next}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.metrics, err = newMetrics(cfg.Metrics); err != nil {
		return nil, fmt.Errorf("httpx: Config.Metrics: %w", err)
	}
	c.routeOf = routerOf(next)
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

func (c *chain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := r.Context()
	var span trace.Span
	if c.tracer != nil {
		ctx, span = c.startSpan(ctx, r)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	info := &requestInfo{Context: ctx, logger: c.logger, outer: r.Pattern, outages: &c.outages, span: span}
	info.id = requestID(r.Header.Get("X-Request-Id"), &info.idBuf)
	w.Header()["X-Request-Id"] = info.slot(slotRequestID, info.id)
	info.sw.ResponseWriter = w
	sw := &info.sw
	r = r.WithContext(info)
	defer c.done(r, info, start)
	defer c.recover(r, info)

	if c.public(r) {
		if c.limiter == nil || c.limit(sw, r, info, addrSubject("pub:", c.client(r, info)), c.pubLim) {
			c.next.ServeHTTP(sw, r)
		}
		return
	}
	key, err := c.authenticate(r)
	switch {
	case err == nil:
		info.key, info.hasKey = key, true
		var admitted bool
		switch {
		case c.limiter == nil:
			admitted = true
		case c.offBudget != nil && c.offBudget(r):
			admitted = c.limit(sw, r, info, addrSubject("pub:", c.client(r, info)), c.pubLim)
		default:
			admitted = c.limit(sw, r, info, "key:"+key.ID, key.EffectiveLimits())
		}
		if admitted {
			c.next.ServeHTTP(sw, r)
		}
	case petstore.ErrorCode(err) == petstore.CodeUnauthorized:
		// Only a missing or wrong key spends the address's budget of
		// attempts, and only such attempts are banned by address.
		if c.limiter == nil || c.limit(sw, r, info, addrSubject("ip:", c.client(r, info)), freeLimits) {
			WriteError(sw, r, err)
		}
	default:
		// The key store could not answer: that says nothing about the key,
		// so nothing is charged or struck, and the client retries soon.
		WriteError(sw, r, err)
	}
}

// recover turns a panic into a 500 Error body (or, when the response has
// started, into a 500 in the log), logging the stack.
func (c *chain) recover(r *http.Request, info *requestInfo) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	c.logger.LogAttrs(info.Context, slog.LevelError, "panic",
		slog.String("request_id", info.id),
		slog.String("panic", fmt.Sprint(v)),
		slog.String("stack", string(debug.Stack())))
	if info.sw.Status == 0 {
		WriteError(&info.sw, r, petstore.Errorf(petstore.CodeInternal, "Internal error."))
		info.cause = causePanic
	} else {
		info.cause = causePanic
		info.sw.Status = http.StatusInternalServerError // what the log should say
	}
}

// authenticate reads the bearer token. The scheme is case-insensitive
// (RFC 7235); anything else is unauthorized, with error="invalid_token" in
// the challenge when a bearer token was presented (RFC 6750 §3). Two or
// more Authorization headers are unauthorized too, whatever they hold:
// which one a proxy or the server reads is not defined, so none is.
func (c *chain) authenticate(r *http.Request) (petstore.APIKey, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeUnauthorized, "send exactly one Authorization header")
	}
	h := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	key, err := c.auth.Authenticate(r.Context(), token)
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
			return petstore.APIKey{}, &invalidToken{err: petstore.UnauthorizedError()}
		}
		return petstore.APIKey{}, err
	}
	return key, nil
}

// invalidToken marks an unauthorized error for a presented token, whose
// challenge names the error.
type invalidToken struct{ err *petstore.Error }

func (e *invalidToken) Error() string { return e.err.Error() }
func (e *invalidToken) Unwrap() error { return e.err }

// limit asks the limiter, writes the rate-limit headers, and answers the
// request itself (429 or 503) when it may not proceed.
func (c *chain) limit(w http.ResponseWriter, r *http.Request, info *requestInfo, subject string, limits petstore.Limits) bool {
	d, err := c.limiter.Decide(r.Context(), subject, limits)
	c.metrics.decision(d, err)
	if d.BanStarted {
		c.logBan(r, info, subject, d)
	}
	if err != nil {
		// A limiter's failure is counted as its decision, not as a
		// store's error.
		defer func() { info.cause = causeNone }()
		if r.Context().Err() != nil {
			// The client went away: nobody reads the answer, and nothing
			// failed that an operator should hear about.
			WriteError(w, r, petstore.Errorf(petstore.CodeUnavailable, "request canceled"))
			return false
		}
		if petstore.ErrorCode(err) != petstore.CodeUnavailable {
			c.logger.LogAttrs(r.Context(), slog.LevelError, "rate limiter failed",
				slog.String("request_id", info.id),
				slog.String("error", err.Error()))
			err = petstore.Errorf(petstore.CodeUnavailable, "rate limiting is unavailable; try again later")
		}
		WriteError(w, r, err)
		return false
	}
	if !d.Degraded {
		// Seconds to reset are counted from the limiter's own clock, the
		// one its windows were measured with; a limiter that does not say
		// (At zero) is read against the handler's.
		now := d.At
		if now.IsZero() {
			now = c.now()
		}
		setRateLimitHeaders(w.Header(), d, now, &info.vals)
	}
	if d.Allowed {
		return true
	}
	secs := max(int64(math.Ceil(d.RetryAfter.Seconds())), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	code, msg := d.Code, fmt.Sprintf("rate limit exceeded; retry after %d seconds", secs)
	switch {
	case code == petstore.CodeAPIKeyBanned && !strings.HasPrefix(subject, "key:"):
		msg = fmt.Sprintf("too many requests from this address; temporarily blocked; retry after %d seconds", secs)
	case code == petstore.CodeAPIKeyBanned:
		msg = fmt.Sprintf("API key temporarily banned for sending after being rate limited; retry after %d seconds", secs)
	case code == petstore.CodeRateLimited:
	default:
		code = petstore.CodeRateLimited
	}
	WriteError(w, r, petstore.Errorf(code, "%s", msg))
	return false
}

// setRateLimitHeaders writes the GitHub-style X-RateLimit-* headers for
// the binding window and the IETF draft headers for every window. They go
// on every response, so they are built in one buffer and stored under
// their canonical keys: fmt and Header.Set made them a third of a small
// request's cost.
func setRateLimitHeaders(h http.Header, d ratelimit.Decision, now time.Time, vals *[valSlots]string) {
	b := d.Binding
	var arr [192]byte // on the stack; one string is made of it
	buf := arr[:0]
	var ends [5]int
	buf = strconv.AppendInt(buf, b.Quota, 10)
	ends[0] = len(buf)
	buf = strconv.AppendInt(buf, max(b.Remaining, 0), 10)
	ends[1] = len(buf)
	buf = strconv.AppendInt(buf, b.ResetUnix(), 10) // rounded up: never early
	ends[2] = len(buf)
	for i, win := range d.Windows {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = strconv.AppendQuote(buf, win.Name)
		buf = append(buf, ";q="...)
		buf = strconv.AppendInt(buf, win.Quota, 10)
		buf = append(buf, ";w="...)
		buf = strconv.AppendInt(buf, int64(win.Length/time.Second), 10)
	}
	ends[3] = len(buf)
	for i, win := range d.Windows {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = strconv.AppendQuote(buf, win.Name)
		buf = append(buf, ";r="...)
		buf = strconv.AppendInt(buf, max(win.Remaining, 0), 10)
		buf = append(buf, ";t="...)
		buf = strconv.AppendInt(buf, win.ResetIn(now), 10)
	}
	ends[4] = len(buf)
	all := string(buf)
	start := 0
	for i, end := range ends {
		vals[i+1] = all[start:end]
		start = end
	}
	// The keys are written in canonical form (textproto), as Set would.
	h["X-Ratelimit-Limit"] = vals[1:2:2]
	h["X-Ratelimit-Remaining"] = vals[2:3:3]
	h["X-Ratelimit-Reset"] = vals[3:4:4]
	if len(d.Windows) == 0 {
		return
	}
	h["Ratelimit-Policy"] = vals[4:5:5]
	h["Ratelimit"] = vals[5:6:6]
}

// addrSubject is the rate-limit subject of a client address. An IPv6
// client is counted per /64, the block one subscriber usually gets, so
// that walking through its own addresses gives it no fresh buckets.
func addrSubject(kind string, a netip.Addr) string {
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return kind + p.String()
		}
	}
	return kind + a.String()
}

// clientAddr is the TCP peer, or, when the peer is a trusted proxy, the
// right-most X-Forwarded-For entry that is not itself a trusted proxy.
// Entries left of an untrusted hop could be forged by the client.
func (c *chain) clientAddr(r *http.Request) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	if !c.trusted(peer) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !c.trusted(a) {
			return a
		}
	}
	return peer
}

func (c *chain) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range c.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads the host of a RemoteAddr ("ip:port", "[ip]:port" or a
// bare ip). An unparsable peer becomes the invalid address, which all such
// peers share as one rate-limit subject.
func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// requestID keeps a client's own id when it is a sane token, so a caller
// can correlate its logs with ours, and otherwise makes a UUID v7 in buf.
func requestID(client string, buf *[36]byte) string {
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
	newUUIDv7(buf, time.Now())
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
