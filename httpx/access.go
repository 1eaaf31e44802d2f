package httpx

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/petstorekit/petstore/ratelimit"
)

// done measures and logs a request once its handler returned. With no
// metrics and a logger that drops info lines it does nothing else.
func (c *chain) done(r *http.Request, info *requestInfo, start time.Time) {
	logged := c.logger.Enabled(info.Context, slog.LevelInfo)
	if c.metrics == nil && !logged && info.span == nil {
		return
	}
	elapsed := time.Since(start)
	route := c.route(r, info)
	if info.span != nil {
		c.endSpan(r, info, route)
	}
	if c.metrics != nil {
		c.metrics.observe(route, r.Method, info.sw.Status, elapsed.Seconds(), info.cause)
		if _, ok := info.sw.Header()["Idempotent-Replayed"]; ok {
			c.metrics.replayed()
		}
	}
	if logged {
		c.logRequest(r, info, route, elapsed)
	}
}

// route is the request's route pattern: the one its handler matched, or,
// for a request answered before routing (401, 429, 503), the one it would
// have matched; "" when no route has the path.
func (c *chain) route(r *http.Request, info *requestInfo) string {
	switch {
	case info.unrouted:
		return "" // refused with 404 or 405: no operation's route
	case info.route != "":
		return info.route
	case r.Pattern != info.outer:
		return r.Pattern // set in place by an inner http.ServeMux or the dashboard
	case c.routeOf != nil:
		return c.routeOf(r)
	}
	return ""
}

// logRequest writes the access log line: who (client address, as the
// limiter counted it, and key id), what (method, route pattern and path;
// never the query, which may hold secrets), the answer (status, body
// bytes, duration) and how to find it again (request id, user agent).
func (c *chain) logRequest(r *http.Request, info *requestInfo, route string, elapsed time.Duration) {
	status := info.sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	attrs := [11]slog.Attr{
		slog.String("client", c.client(r, info).String()),
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int64("bytes", info.sw.Bytes),
		slog.Duration("duration", elapsed),
		slog.String("user_agent", r.UserAgent()),
		slog.String("request_id", info.id),
	}
	n := 9
	if info.hasKey {
		attrs[n] = slog.String("key_id", info.key.ID) // the public id, never the secret
		n++
	}
	if info.cause != causeNone {
		attrs[n] = slog.String("store_error", causeNames[info.cause])
		n++
	}
	// The record is handed to the handler directly: Logger.LogAttrs
	// would walk the stack for the caller's PC on every request, for a
	// source location nobody asked for.
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	rec.AddAttrs(attrs[:n]...)
	_ = c.logger.Handler().Handle(info.Context, rec)
}

// logBan writes the one line that says a ban started: whose (key id or
// client address) and until when.
func (c *chain) logBan(r *http.Request, info *requestInfo, subject string, d ratelimit.Decision) {
	who := slog.String("client", c.client(r, info).String())
	if id, ok := strings.CutPrefix(subject, "key:"); ok {
		who = slog.String("key_id", id)
	}
	c.logger.LogAttrs(info.Context, slog.LevelWarn, "ban started",
		who,
		slog.String("subject", strings.SplitN(subject, ":", 2)[0]),
		slog.Time("until", d.Binding.Reset.UTC()),
		slog.Duration("for", d.RetryAfter),
		slog.String("route", c.route(r, info)),
		slog.String("request_id", info.id))
}

// client is the request's client address as the limiter sees it,
// computed once per request.
func (c *chain) client(r *http.Request, info *requestInfo) netip.Addr {
	if !info.addr.IsValid() {
		info.addr = c.clientAddr(r)
	}
	return info.addr
}

// routerOf returns how to find the route of a request the chain answered
// before next routed it, or nil when next cannot say.
func routerOf(next http.Handler) func(*http.Request) string {
	switch h := next.(type) {
	case *api:
		return h.router.Route
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

// LimitSubjects returns the rate-limit subjects (see RateLimiter) of an
// API key id or a client address: "key:<id>", or the address's "ip:" and
// "pub:" budgets (an IPv6 address's /64), for an operator lifting a ban.
func LimitSubjects(keyIDOrAddress string) []string {
	if a, err := netip.ParseAddr(keyIDOrAddress); err == nil {
		a = a.Unmap()
		return []string{addrSubject("ip:", a), addrSubject("pub:", a)}
	}
	return []string{"key:" + keyIDOrAddress}
}
