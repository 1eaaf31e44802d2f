package httpx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/lazydeadline"
	"github.com/petstorekit/petstore/internal/statuswriter"
	"github.com/petstorekit/petstore/ratelimit"
)

// RateLimiter decides on each request. subject says whose budget the
// request spends:
//   - "key:<APIKey.ID>", a valid key's, at its plan's limits, whoever
//     else shares its address;
//   - "cond:<APIKey.ID>", a valid key's conditional requests', at
//     ConditionalLimits;
//   - "ip:<client address>", a missing or wrong key's, at the Free plan's
//     limits: only such attempts spend it, so one bad client behind a NAT
//     never locks out the valid keys behind it;
//   - "pub:<client address>", a public path's, at Config.PublicLimits.
//
// An IPv6 client is counted per /64. Implementations must be safe for
// concurrent use and honour ctx; an error answers the request 503.
type RateLimiter interface {
	Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error)
}

// A Refunder is a RateLimiter that can give back what a decision spent,
// for a request a store failed (503): an outage spends nobody's quota.
type Refunder interface {
	Refund(ctx context.Context, subject string, limits petstore.Limits, at time.Time) error
}

// An Estimator is a RateLimiter that can report a subject's figures
// without deciding, counting nothing: the headers of a request no
// decision was made for (the key store failed). ratelimit.Limiter is one.
type Estimator interface {
	Estimate(subject string, limits petstore.Limits) ratelimit.Decision
}

// DefaultPublicLimits are the per-address allowances of public paths (the
// OpenAPI document, the dashboard page) when Config.PublicLimits is zero.
var DefaultPublicLimits = petstore.Limits{PerMinute: 600, PerDay: 20_000}

// state is what the chain's steps learn about a request for later ones.
// withState makes it; authenticate sets key; the router sets route or
// unrouted; WriteError sets cause, which recoverPanics sets to a panic's
// and a limiter's failure keeps as it was (writeErrorQuietly).
type state struct {
	id       string
	w        *statuswriter.Writer // the response as the chain wrote it
	start    time.Time
	key      petstore.APIKey
	hasKey   bool
	route    string
	unrouted bool   // refused for its path or method (404, 405): no route
	cause    string // why a store failed the request (causeTimeout, ...); "" for none
	logger   *slog.Logger
	outages  *sync.Map // cause of 503s -> *outageSlot, for logOutage
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

// KeyFromContext returns the API key that authenticated the request, as
// set by the chain of New or Wrap. It reports false for a public path.
func KeyFromContext(ctx context.Context) (petstore.APIKey, bool) {
	if st := stateOf(ctx); st != nil && st.hasKey {
		return st.key, true
	}
	return petstore.APIKey{}, false
}

// RequestIDFromContext returns the request's id, the value of its
// X-Request-Id response header, or "" outside the chain.
func RequestIDFromContext(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

// withState is the first step: the request's state and X-Request-Id.
func withState(logger *slog.Logger) func(http.Handler) http.Handler {
	outages := new(sync.Map)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := &state{start: time.Now(), id: requestID(r.Header.Get("X-Request-Id")), logger: logger, outages: outages}
			st.w = &statuswriter.Writer{ResponseWriter: w}
			w.Header().Set("X-Request-Id", st.id)
			next.ServeHTTP(st.w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
		})
	}
}

// requestID keeps a client's own id when it is a sane token, so a caller
// can correlate its logs with ours, and otherwise makes a UUID v7.
func requestID(client string) string {
	notToken := func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if n := len(client); n > 0 && n <= 128 && !strings.ContainsFunc(client, notToken) {
		return client
	}
	return uuid.Must(uuid.NewV7()).String() // fails only if the system has no randomness
}

// logRequests writes a "request" line at Info per answered request; see
// docs/operating.md#logs. Never the query (it may hold secrets), never
// the key's secret.
func logRequests(logger *slog.Logger, client func(*http.Request) netip.Addr, find func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			ctx := r.Context()
			if !logger.Enabled(ctx, slog.LevelInfo) {
				return
			}
			st := stateOf(ctx)
			attrs := append(make([]slog.Attr, 0, 11),
				slog.String("client", client(r).String()),
				slog.String("method", r.Method),
				slog.String("route", routeOf(r, st, find)),
				slog.String("path", r.URL.Path),
				slog.Int("status", statusOf(st)),
				slog.Int64("bytes", st.w.Bytes),
				slog.Duration("duration", time.Since(st.start)),
				slog.String("user_agent", r.UserAgent()),
				slog.String("request_id", st.id))
			if st.hasKey {
				attrs = append(attrs, slog.String("key_id", st.key.ID))
			}
			if st.cause != "" {
				attrs = append(attrs, slog.String("store_error", st.cause))
			}
			logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		})
	}
}

// statusOf is the status the client got (200 when nothing was written).
func statusOf(st *state) int { return cmp.Or(st.w.Status, http.StatusOK) }

// Wrap puts next behind the same chain as the /v1 API, with JSON Error
// bodies throughout. Requests whose URL path is one of publicPaths skip
// authentication and spend their address's public budget
// (Config.PublicLimits). cfg.Service and cfg.BasePath are not used.
func Wrap(cfg Config, next http.Handler, publicPaths ...string) (http.Handler, error) {
	return newChain(traceConfig(cfg), next, pathSet(publicPaths))
}

// pathSet reports whether a request's path is one of paths.
func pathSet(paths []string) func(*http.Request) bool {
	paths = slices.Clone(paths) // the caller's slice may change later
	return func(r *http.Request) bool { return slices.Contains(paths, r.URL.Path) }
}

// newChain puts next behind the steps every API shares, outermost first.
func newChain(cfg Config, next http.Handler, public func(*http.Request) bool) (http.Handler, error) {
	if cfg.Auth == nil {
		return nil, errors.New("httpx: Config.Auth is required")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.AccessLog = cmp.Or(cfg.AccessLog, cfg.Logger)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PublicLimits == (petstore.Limits{}) {
		cfg.PublicLimits = DefaultPublicLimits
	} else if !cfg.PublicLimits.Valid() {
		return nil, errors.New("httpx: Config.PublicLimits must be positive, with per day >= per minute")
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("httpx: Config.Metrics: %w", err)
	}
	routeOf := routerOf(next)
	lim := &limits{Config: cfg, metrics: m, offBudget: pathSet(cfg.PublicBudgetPaths), routeOf: routeOf}
	steps := []func(http.Handler) http.Handler{
		withState(cfg.Logger),
		logRequests(cfg.AccessLog, lim.client, routeOf),
		traceRequests(cfg.TracerProvider, lim.client, routeOf),
		measure(m, routeOf),
		recoverPanics(cfg.Logger),
		withTimeout(cfg.Timeout),
		authenticate(cfg.Auth, public, lim.client, lim.attempt),
		lim.limitRequests,
	}
	for _, step := range slices.Backward(steps) { // the first step is outermost
		next = step(next)
	}
	return next, nil
}

// withTimeout bounds the request's waits on the stores (Config.Timeout).
func withTimeout(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := lazydeadline.WithDeadline(r.Context(), time.Now().Add(d))
			defer ctx.Stop()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// recoverPanics logs a panic's stack and answers 500 (in the log only,
// when the response has started).
func recoverPanics(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				st := stateOf(r.Context())
				logger.LogAttrs(r.Context(), slog.LevelError, "panic",
					slog.String("request_id", st.id),
					slog.String("panic", fmt.Sprint(v)),
					slog.String("stack", string(debug.Stack())))
				if st.w.Status == 0 {
					WriteError(w, r, petstore.Errorf(petstore.CodeInternal, "Internal error."))
				} else {
					st.w.Status = http.StatusInternalServerError // what the log should say
				}
				st.cause = causePanic
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// routerOf returns how to find the route of a request the chain answered
// before next routed it, or nil when next cannot say.
func routerOf(next http.Handler) func(*http.Request) string {
	switch h := next.(type) {
	case interface{ Route(*http.Request) string }:
		return h.Route
	case *http.ServeMux:
		return func(r *http.Request) string {
			_, pattern := h.Handler(r)
			return pattern
		}
	}
	return nil
}

// routeOf is the route pattern the request matched or, answered before
// routing (401, 429, 503), would have matched; "" for none.
func routeOf(r *http.Request, st *state, find func(*http.Request) string) string {
	if st.route == "" && !st.unrouted && find != nil {
		return find(r)
	}
	return st.route
}

// routePath is routeOf without the pattern's method ("GET /v1/pets" is
// "/v1/pets"), for the metrics and spans, which name the method apart.
func routePath(r *http.Request, st *state, find func(*http.Request) string) string {
	route := routeOf(r, st, find)
	if _, path, ok := strings.Cut(route, " "); ok {
		return path
	}
	return route
}
