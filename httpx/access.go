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
// metrics, no tracing and no access log (none set and a Logger that drops
// Info lines) it does nothing else.
func (c *chain) done(r *http.Request, info *requestInfo, start time.Time) {
	access := c.access
	if access == nil && c.logger.Enabled(info.Context, slog.LevelInfo) {
		access = slogAccessLog{c.logger}
	}
	if c.metrics == nil && access == nil && info.span == nil {
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
	if access != nil {
		c.logRequest(access, r, info, route, elapsed)
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

// logRequest hands the request's access log entry to access.
func (c *chain) logRequest(access AccessLogger, r *http.Request, info *requestInfo, route string, elapsed time.Duration) {
	// NewJSONAccessLog's and NewTextAccessLog's entry lives on the stack,
	// as their LogRequest keeps nothing of it; another logger's is on the
	// heap, as its call through the interface may keep it.
	if l, ok := access.(*lineLog); ok {
		var e RequestLog
		c.fillLog(&e, r, info, route, elapsed)
		l.LogRequest(info.Context, &e)
		return
	}
	e := new(RequestLog)
	c.fillLog(e, r, info, route, elapsed)
	access.LogRequest(info.Context, e)
}

// fillLog writes the request's access log entry into e.
func (c *chain) fillLog(e *RequestLog, r *http.Request, info *requestInfo, route string, elapsed time.Duration) {
	status := info.sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	*e = RequestLog{
		Time:       info.start.Add(elapsed), // now, without reading the clock again
		Client:     c.client(r, info),
		Method:     r.Method,
		Route:      route,
		Path:       r.URL.Path,
		Status:     status,
		Bytes:      info.sw.Bytes,
		Duration:   elapsed,
		UserAgent:  firstValue(r.Header, "User-Agent"),
		RequestID:  info.id,
		StoreError: causeNames[info.cause],
	}
	if info.hasKey {
		e.KeyID = info.key.ID // the public id, never the secret
	}
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
