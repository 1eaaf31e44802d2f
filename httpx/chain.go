package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/statuswriter"
	"github.com/petstorekit/petstore/ratelimit"
)

// RateLimiter decides on each request. subject is "key:<APIKey.ID>" for an
// authenticated request (limits = key.EffectiveLimits()), or
// "ip:<client address>" (an IPv6 client as its /64, "ip:2001:db8::/64")
// for a request without a valid key, for the public OpenAPI document, and
// for any request from an address refused a moment ago (limits = the Free
// plan's). Implementations must
// be safe for concurrent use and honour context cancellation. An error
// answers the request 503 unavailable: failing open or closed when the
// counter store is down is the limiter's decision, not httpx's.
type RateLimiter interface {
	Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error)
}

// requestInfo is what the chain learns about one request. Inner handlers
// fill in the route; the chain logs it when the request ends.
type requestInfo struct {
	id     string
	logger *slog.Logger
	key    petstore.APIKey
	hasKey bool
	route  string
}

type infoKey struct{}

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
	next    http.Handler
	refused refusedAddrs
}

// maxRefusedAddrs bounds the addresses a chain remembers as refused: a
// flood from many addresses costs at most this many small entries.
const maxRefusedAddrs = 1 << 16

// refusedAddrs remembers the "ip:" subjects the limiter refused, until the
// refusal's Retry-After has passed. A request from such an address is
// decided by its address before any key is looked at, so a key guesser
// that has been refused cannot tell a right key (which would otherwise be
// limited by key, and pass) from a wrong one. The limiter still decides
// each of those requests, so its strikes and bans, and a window that ended
// early, hold as they would; the entry only says "ask about the address
// first". It is per process: another process learns of the refusal from
// its own first refused request.
type refusedAddrs struct {
	n     atomic.Int64 // len(until), read without the lock on every request
	mu    sync.Mutex
	until map[string]time.Time
}

// has reports whether subject was refused and the refusal may still hold.
func (a *refusedAddrs) has(subject string, now time.Time) bool {
	if a.n.Load() == 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.until[subject]
	if ok && !now.Before(until) {
		delete(a.until, subject)
		a.n.Store(int64(len(a.until)))
		return false
	}
	return ok
}

// add remembers subject as refused until until, pruning expired entries
// when the map is full and, if it is still full, forgetting an arbitrary
// one: forgetting costs at most one authenticated request per address.
func (a *refusedAddrs) add(subject string, now, until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until == nil {
		a.until = make(map[string]time.Time)
	}
	if _, ok := a.until[subject]; !ok && len(a.until) >= maxRefusedAddrs {
		for s, u := range a.until {
			if !now.Before(u) {
				delete(a.until, s)
			}
		}
		for s := range a.until {
			if len(a.until) < maxRefusedAddrs {
				break
			}
			delete(a.until, s)
		}
	}
	a.until[subject] = until
	a.n.Store(int64(len(a.until)))
}

// forget drops subject: the limiter admitted it again.
func (a *refusedAddrs) forget(subject string) {
	if a.n.Load() == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.until, subject)
	a.n.Store(int64(len(a.until)))
}

func newChain(cfg Config, next http.Handler, public func(*http.Request) bool) (*chain, error) {
	if cfg.Auth == nil {
		return nil, errors.New("httpx: Config.Auth is required")
	}
	c := &chain{auth: cfg.Auth, logger: cfg.Logger, limiter: cfg.Limiter, proxies: cfg.TrustedProxies, now: cfg.Now, public: public, next: next}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.public == nil {
		c.public = func(*http.Request) bool { return false }
	}
	return c, nil
}

// Wrap puts next behind the same chain as the /v1 API: X-Request-Id,
// request logging, panic recovery (500 Error body), bearer authentication
// (401) and rate limiting (429, 503), with JSON Error bodies throughout.
// Requests whose URL path is one of publicPaths skip authentication but are
// still rate limited by client address. cfg.Service and cfg.BasePath are
// not used. Inside next, KeyFromContext returns the authenticated key.
// When next is an http.ServeMux its matched pattern is logged as the route.
func Wrap(cfg Config, next http.Handler, publicPaths ...string) (http.Handler, error) {
	public := make(map[string]bool, len(publicPaths))
	for _, p := range publicPaths {
		public[p] = true
	}
	return newChain(cfg, next, func(r *http.Request) bool { return public[r.URL.Path] })
}

func (c *chain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &requestInfo{id: requestID(r.Header.Get("X-Request-Id")), logger: c.logger}
	w.Header().Set("X-Request-Id", info.id)
	sw := &statuswriter.Writer{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))

	defer func() {
		route := info.route
		if route == "" {
			route = r.Pattern // set in place by an inner http.ServeMux
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", sw.Status),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", info.id),
		}
		if info.hasKey {
			attrs = append(attrs, slog.String("key_id", info.key.ID)) // the public id, never the secret
		}
		c.logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	}()
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		c.logger.LogAttrs(r.Context(), slog.LevelError, "panic",
			slog.String("request_id", info.id),
			slog.String("panic", fmt.Sprint(v)),
			slog.String("stack", string(debug.Stack())))
		if sw.Status == 0 {
			WriteError(sw, r, petstore.Errorf(petstore.CodeInternal, "Internal error."))
		} else {
			sw.Status = http.StatusInternalServerError // what the log should say
		}
	}()

	free, _ := petstore.PlanFree.Limits()
	limits := free
	subject := ""
	addrDecided := false
	var authErr error
	if c.public(r) {
		subject = addrSubject(c.clientAddr(r))
	} else {
		if c.limiter != nil {
			// An address the limiter refused is decided by address before
			// its key is checked: while refused, a right key gets the same
			// 429 as a wrong one, so guessing learns nothing.
			if addr := addrSubject(c.clientAddr(r)); c.refused.has(addr, c.now()) {
				if !c.limit(sw, r, addr, free) {
					return
				}
				addrDecided = true
			}
		}
		key, err := c.authenticate(r)
		if err == nil {
			info.key, info.hasKey = key, true
			subject, limits = "key:"+key.ID, key.EffectiveLimits()
		} else {
			subject, authErr = addrSubject(c.clientAddr(r)), err
		}
	}
	if c.limiter != nil && !(addrDecided && authErr != nil) && !c.limit(sw, r, subject, limits) {
		return
	}
	if authErr != nil {
		WriteError(sw, r, authErr)
		return
	}
	c.next.ServeHTTP(sw, r)
}

// authenticate reads the bearer token. The scheme is case-insensitive
// (RFC 7235); anything else is unauthorized, with error="invalid_token" in
// the challenge when a bearer token was presented (RFC 6750 §3). Two or
// more Authorization headers are unauthorized too, whatever they hold:
// which one a proxy or the server reads is not defined, so none is.
func (c *chain) authenticate(r *http.Request) (petstore.APIKey, error) {
	unauthorized := petstore.Errorf(petstore.CodeUnauthorized, "missing or invalid API key")
	if len(r.Header.Values("Authorization")) > 1 {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeUnauthorized, "send exactly one Authorization header")
	}
	h := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return petstore.APIKey{}, unauthorized
	}
	key, err := c.auth.Authenticate(r.Context(), token)
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
			return petstore.APIKey{}, &invalidToken{err: unauthorized}
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
func (c *chain) limit(w http.ResponseWriter, r *http.Request, subject string, limits petstore.Limits) bool {
	d, err := c.limiter.Decide(r.Context(), subject, limits)
	if err != nil {
		if r.Context().Err() != nil {
			// The client went away: nobody reads the answer, and nothing
			// failed that an operator should hear about.
			WriteError(w, r, petstore.Errorf(petstore.CodeUnavailable, "request canceled"))
			return false
		}
		if petstore.ErrorCode(err) != petstore.CodeUnavailable {
			c.logger.LogAttrs(r.Context(), slog.LevelError, "rate limiter failed",
				slog.String("request_id", RequestIDFromContext(r.Context())),
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
		setRateLimitHeaders(w.Header(), d, now)
	}
	byAddr := strings.HasPrefix(subject, "ip:")
	if d.Allowed {
		if byAddr {
			c.refused.forget(subject)
		}
		return true
	}
	secs := max(int64(math.Ceil(d.RetryAfter.Seconds())), 1)
	if byAddr {
		now := c.now()
		c.refused.add(subject, now, now.Add(time.Duration(secs)*time.Second))
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	code, msg := d.Code, fmt.Sprintf("rate limit exceeded; retry after %d seconds", secs)
	switch {
	case code == petstore.CodeAPIKeyBanned && byAddr:
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
func setRateLimitHeaders(h http.Header, d ratelimit.Decision, now time.Time) {
	b := d.Binding
	buf := make([]byte, 0, 160)
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
	vals := make([]string, 5) // one backing array for the five header values
	start := 0
	for i, end := range ends {
		vals[i] = all[start:end]
		start = end
	}
	// The keys are written in canonical form (textproto), as Set would.
	h["X-Ratelimit-Limit"] = vals[0:1:1]
	h["X-Ratelimit-Remaining"] = vals[1:2:2]
	h["X-Ratelimit-Reset"] = vals[2:3:3]
	if len(d.Windows) == 0 {
		return
	}
	h["Ratelimit-Policy"] = vals[3:4:4]
	h["Ratelimit"] = vals[4:5:5]
}

// addrSubject is the rate-limit subject of a client address. An IPv6
// client is counted per /64, the block one subscriber usually gets, so
// that walking through its own addresses gives it no fresh buckets.
func addrSubject(a netip.Addr) string {
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return "ip:" + p.String()
		}
	}
	return "ip:" + a.String()
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
// can correlate its logs with ours, and otherwise makes a UUID v7.
func requestID(client string) string {
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
	return uuid.Must(uuid.NewV7()).String()
}
