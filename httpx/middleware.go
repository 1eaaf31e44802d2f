package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
)

// ServeHTTP runs the request through the chain, outermost first: request
// id (which makes the request's requestInfo), access log, recover,
// authenticate, rate limit, then next. Every step finds the request's
// state in its requestInfo, so that a request costs one allocation for
// all of them.
func (c *chain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The request's span and deadline, its requestInfo (the context every
	// later step reads), and its X-Request-Id.
	start := time.Now()
	ctx := r.Context()
	var span trace.Span
	if c.tracer != nil {
		ctx, span = c.startSpan(ctx, r)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(c.timeout)) // no second clock read
		defer cancel()
	}
	info := &requestInfo{Context: ctx, logger: c.logger, outer: r.Pattern, outages: &c.outages, span: span, start: start}
	info.id = requestID(firstValue(r.Header, "X-Request-Id"), &info.idBuf, start)
	w.Header()["X-Request-Id"] = info.slot(slotRequestID, info.id)
	info.sw.ResponseWriter = w
	info.req = *r.WithContext(info) // inlined: its copy is on the stack
	c.serve(&info.sw, &info.req, info)
}

// serve logs, measures and ends the trace of the request once it is
// answered, turns a panic further in into a 500 (see recover), and runs
// authenticate and limit before next.
func (c *chain) serve(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	defer c.done(r, info, info.start)
	defer c.recover(r, info)
	if c.public(r) {
		info.public = true
	} else if !c.authenticated(w, r, info) {
		return
	}
	if c.limiter != nil && !c.limitRequest(w, r, info) {
		return
	}
	if info.authErr != nil {
		WriteError(w, r, info.authErr) // admitted by the limiter, still 401
		return
	}
	c.next.ServeHTTP(w, r)
}

// authenticated reads the bearer key of a request to a non-public path.
// A valid key is the request's from then on; a missing or wrong one is
// left in info.authErr for limitRequest to charge to the address before
// the 401; a key store that cannot answer is 503 at once, and
// authenticated reports false: that says nothing about the key, so
// nothing is charged or struck, and the client retries soon.
func (c *chain) authenticated(w http.ResponseWriter, r *http.Request, info *requestInfo) bool {
	key, err := c.authenticate(r)
	switch {
	case err == nil:
		info.key, info.hasKey = key, true
	case petstore.ErrorCode(err) == petstore.CodeUnauthorized:
		info.authErr = err
	default:
		WriteError(w, r, err)
		return false
	}
	return true
}

// limitRequest decides the request on the budget it spends (see
// RateLimiter): a public path's address budget, a valid key's own, or,
// for a missing or wrong key, the address's budget of attempts, which
// only such attempts spend and which alone bans an address. It answers
// 429 or 503 itself and then reports false.
func (c *chain) limitRequest(w http.ResponseWriter, r *http.Request, info *requestInfo) bool {
	switch {
	case info.public, info.hasKey && c.offBudget != nil && c.offBudget(r):
		return c.limit(w, r, info, addrSubject("pub:", c.client(r, info)), c.pubLim)
	case info.authErr != nil:
		return c.limit(w, r, info, addrSubject("ip:", c.client(r, info)), freeLimits)
	default:
		return c.limit(w, r, info, "key:"+info.key.ID, info.key.EffectiveLimits())
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
	if len(r.Header["Authorization"]) > 1 {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeUnauthorized, "send exactly one Authorization header")
	}
	h := firstValue(r.Header, "Authorization")
	scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	var key petstore.APIKey
	var err error
	if ca, ok := c.auth.(clientAuthenticator); ok {
		key, err = ca.AuthenticateClient(r.Context(), token, c.clientAddr(r))
	} else {
		key, err = c.auth.Authenticate(r.Context(), token)
	}
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
			return petstore.APIKey{}, &invalidToken{err: petstore.UnauthorizedError()}
		}
		return petstore.APIKey{}, err
	}
	return key, nil
}

// clientAuthenticator is an Authenticator that also takes the client's
// address, to pace the key lookups of a client the rate limiter refuses
// (keycache.Cache).
type clientAuthenticator interface {
	AuthenticateClient(ctx context.Context, token string, client netip.Addr) (petstore.APIKey, error)
}

// invalidToken marks an unauthorized error for a presented token, whose
// challenge names the error.
type invalidToken struct{ err *petstore.Error }

func (e *invalidToken) Error() string { return e.err.Error() }
func (e *invalidToken) Unwrap() error { return e.err }

// firstValue is h.Get(key) for a key already in canonical form: net/http
// stores a request's fields under canonical keys, and Get would check and
// canonicalize the key again, byte by byte, on every request.
func firstValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
