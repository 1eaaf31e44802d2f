package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// unavailableRetryAfter is a 503's Retry-After: outages are often short.
const unavailableRetryAfter = "2"

var freeLimits, _ = petstore.PlanFree.Limits()

// limits is the rate-limit step: the chain's Config (Limiter nil: no
// limiting) and what newChain makes of it.
type limits struct {
	Config
	metrics   *metrics
	offBudget func(*http.Request) bool // Config.PublicBudgetPaths
	routeOf   func(*http.Request) string
}

// limitRequests decides a request on the budget it spends (see
// RateLimiter); a conditional one spends the plan's quota only once its
// answer is not 304, and one a store failed (503) is refunded.
func (l *limits) limitRequests(next http.Handler) http.Handler {
	if l.Limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateOf(r.Context())
		var subject string
		var lim petstore.Limits
		var cond *chargeUnlessNotModified
		switch {
		case !st.hasKey, l.offBudget(r):
			subject, lim = addrSubject("pub:", l.client(r)), l.PublicLimits
		case isConditional(r):
			subject, lim = "cond:"+st.key.ID, ConditionalLimits(st.key.EffectiveLimits())
			cond = &chargeUnlessNotModified{ResponseWriter: w, r: r, l: l, before: maps.Clone(w.Header())}
		default:
			subject, lim = KeySubject(st.key.ID), st.key.EffectiveLimits()
		}
		at, ok := l.decide(w, r, subject, lim)
		if !ok {
			return
		}
		if cond != nil {
			w = cond
		}
		next.ServeHTTP(w, r)
		if st.w.Status == http.StatusServiceUnavailable && (st.cause == causeTimeout || st.cause == causeUnavailable) {
			l.refund(r, subject, lim, at)
			if cond != nil && cond.charged {
				l.refund(r, KeySubject(st.key.ID), st.key.EffectiveLimits(), cond.chargedAt)
			}
		}
	})
}

// ConditionalLimits are the allowance of a key's conditional requests
// (If-None-Match), ten times its plan's (at most math.MaxInt64): a 304
// spends only this.
func ConditionalLimits(plan petstore.Limits) petstore.Limits {
	times10 := func(n int64) int64 {
		if n > math.MaxInt64/10 {
			return math.MaxInt64 // not an overflow into limits that are not valid
		}
		return 10 * n
	}
	return petstore.Limits{PerMinute: times10(plan.PerMinute), PerDay: times10(plan.PerDay)}
}

// isConditional reports whether r may be answered 304 Not Modified: a
// GET or HEAD with an If-None-Match that names something, on any of its
// lines (RFC 9110 reads them as one list), as writeEncoded reads it.
func isConditional(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, v := range r.Header.Values("If-None-Match") {
		if strings.Trim(v, " \t,") != "" {
			return true
		}
	}
	return false
}

// chargeUnlessNotModified spends the plan's quota of a conditional
// request whose answer is not 304, or drops that answer for the 429.
type chargeUnlessNotModified struct {
	http.ResponseWriter
	r                         *http.Request
	l                         *limits
	decided, refused, charged bool
	chargedAt                 time.Time   // the plan's decision, when charged
	before                    http.Header // set around the handler: a 429 keeps these, none of the handler's
}

func (c *chargeUnlessNotModified) WriteHeader(status int) {
	if !c.decided && status >= 200 { // not on a 1xx, which precedes the answer
		c.decided = true
		if status != http.StatusNotModified {
			c.charge()
		}
	}
	if !c.refused {
		c.ResponseWriter.WriteHeader(status)
	}
}

func (c *chargeUnlessNotModified) Write(b []byte) (int, error) {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if c.refused {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *chargeUnlessNotModified) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *chargeUnlessNotModified) charge() {
	st := stateOf(c.r.Context())
	h := c.ResponseWriter.Header()
	saved := h.Clone()
	maps.DeleteFunc(h, func(k string, _ []string) bool { return c.before[k] == nil })
	if at, ok := c.l.decide(c.ResponseWriter, c.r, KeySubject(st.key.ID), st.key.EffectiveLimits()); ok {
		c.charged, c.chargedAt = true, at
		for k, v := range saved {
			if _, set := h[k]; !set {
				h[k] = v
			}
		}
		return
	}
	c.refused = true
}

// refund gives back what a request spent, when the limiter can.
func (l *limits) refund(r *http.Request, subject string, lim petstore.Limits, at time.Time) {
	if rf, ok := untraced(l.Limiter).(Refunder); ok {
		_ = rf.Refund(context.WithoutCancel(r.Context()), subject, lim, at) // as a decision, it fails only when the limiter does
	}
}

// attempt charges a missing or wrong key's try to its address's budget;
// one the key store could not decide (charge false) spends nothing, but
// reports that budget as the limiter estimates it (Estimator).
func (l *limits) attempt(w http.ResponseWriter, r *http.Request, charge bool) bool {
	if l.Limiter == nil {
		return true
	}
	subject := addrSubject("ip:", l.client(r))
	if !charge {
		if e, ok := untraced(l.Limiter).(Estimator); ok {
			l.setHeaders(w, e.Estimate(subject, freeLimits))
		}
		return true
	}
	_, ok := l.decide(w, r, subject, freeLimits)
	return ok
}

// decide asks the limiter, sets the headers, and answers a 429 or 503; ok
// is whether the request may go on, at the decision's instant (for refund).
func (l *limits) decide(w http.ResponseWriter, r *http.Request, subject string, lim petstore.Limits) (time.Time, bool) {
	d, err := l.Limiter.Decide(r.Context(), subject, lim)
	l.metrics.decision(d, err)
	if d.BanStarted {
		l.logBan(r, subject, d)
	}
	// Every answer carries the headers, as the spec says: a fallback's
	// figures are this process's estimate, as a lease's are, and so are
	// those that come with an error (ratelimit.Limiter.Decide).
	if err == nil || d.Binding.Quota > 0 {
		l.setHeaders(w, d)
	}
	if err != nil {
		if r.Context().Err() != nil { // the client went away: nothing failed
			err = petstore.Errorf(petstore.CodeUnavailable, "request canceled")
		} else if petstore.ErrorCode(err) != petstore.CodeUnavailable {
			l.Logger.LogAttrs(r.Context(), slog.LevelError, "rate limiter failed",
				slog.String("request_id", RequestIDFromContext(r.Context())),
				slog.String("error", err.Error()))
			err = petstore.Errorf(petstore.CodeUnavailable, "rate limiting is unavailable; try again later")
		}
		writeErrorQuietly(w, r, err) // a limiter's failure is counted as its decision, not as a store's error
		return time.Time{}, false
	}
	if d.Allowed {
		return d.At, true
	}
	secs := max(int64(math.Ceil(d.RetryAfter.Seconds())), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	code, msg := d.Code, fmt.Sprintf("rate limit exceeded; retry after %d seconds", secs)
	switch {
	case code == petstore.CodeAPIKeyBanned && !strings.HasPrefix(subject, "key:") && !strings.HasPrefix(subject, "cond:"):
		msg = fmt.Sprintf("too many requests from this address; temporarily blocked; retry after %d seconds", secs)
	case code == petstore.CodeAPIKeyBanned:
		msg = fmt.Sprintf("API key temporarily banned for sending after being rate limited; retry after %d seconds", secs)
	case code != petstore.CodeRateLimited:
		code = petstore.CodeRateLimited
	}
	WriteError(w, r, petstore.Errorf(code, "%s", msg))
	return time.Time{}, false
}

// writeErrorQuietly is WriteError for a failure that is no store's.
func writeErrorQuietly(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	cause := st.cause
	WriteError(w, r, err)
	st.cause = cause
}

// setHeaders writes X-RateLimit-* for d's binding window and, with
// Config.IETFRateLimitHeaders, the IETF draft headers for every window;
// seconds to reset count from the limiter's clock, if it says.
func (l *limits) setHeaders(w http.ResponseWriter, d ratelimit.Decision) {
	now := d.At
	if now.IsZero() {
		now = l.Now()
	}
	h, b := w.Header(), d.Binding
	h.Set("X-RateLimit-Limit", strconv.FormatInt(b.Quota, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(max(b.Remaining, 0), 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.ResetUnix(), 10)) // rounded up: never early
	if !l.IETFRateLimitHeaders || len(d.Windows) == 0 {
		return
	}
	policy := make([]string, len(d.Windows))
	state := make([]string, len(d.Windows))
	for i, win := range d.Windows {
		policy[i] = fmt.Sprintf("%q;q=%d;w=%d", win.Name, win.Quota, int64(win.Length/time.Second))
		state[i] = fmt.Sprintf("%q;r=%d;t=%d", win.Name, max(win.Remaining, 0), win.ResetIn(now))
	}
	h.Set("RateLimit-Policy", strings.Join(policy, ", "))
	h.Set("RateLimit", strings.Join(state, ", "))
}

// logBan writes the one line that says whose ban started, until when.
func (l *limits) logBan(r *http.Request, subject string, d ratelimit.Decision) {
	kind, who, _ := strings.Cut(subject, ":")
	attr := slog.String("client", l.client(r).String())
	if kind == "key" || kind == "cond" {
		attr = slog.String("key_id", who)
	}
	l.Logger.LogAttrs(r.Context(), slog.LevelWarn, "ban started", attr,
		slog.String("subject", kind), slog.Time("until", d.Binding.Reset.UTC()), slog.Duration("for", d.RetryAfter),
		slog.String("route", routeOf(r, stateOf(r.Context()), l.routeOf)),
		slog.String("request_id", RequestIDFromContext(r.Context())))
}

// addrSubject is the rate-limit subject of a client address; an IPv6
// client is counted per /64, the block one subscriber usually gets.
func addrSubject(kind string, a netip.Addr) string {
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return kind + p.String()
		}
	}
	return kind + a.String()
}

// client is the TCP peer or, from a trusted proxy, the right-most
// X-Forwarded-For entry that is not a trusted proxy (the rest is forgeable).
func (l *limits) client(r *http.Request) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	if !l.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if a = a.Unmap(); !l.trusted(a) {
			return a
		}
	}
	return peer
}

func (l *limits) trusted(a netip.Addr) bool {
	return a.IsValid() && slices.ContainsFunc(l.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(a) })
}

// parseAddr reads the host of a RemoteAddr; all unparsable peers share
// the invalid address as one rate-limit subject.
func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// KeySubject is the rate-limit subject of an API key (see RateLimiter).
func KeySubject(keyID string) string { return "key:" + keyID }

// LimitSubjects returns the rate-limit subjects of an API key id or a
// client address (see RateLimiter), for an operator lifting a ban.
func LimitSubjects(keyIDOrAddress string) []string {
	if a, err := netip.ParseAddr(keyIDOrAddress); err == nil {
		a = a.Unmap()
		return []string{addrSubject("ip:", a), addrSubject("pub:", a)}
	}
	return []string{KeySubject(keyIDOrAddress), "cond:" + keyIDOrAddress}
}
