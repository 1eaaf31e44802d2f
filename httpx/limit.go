package httpx

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

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
		setRateLimitHeaders(w.Header(), d, now, &info.vals, c.ietf)
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
// the binding window and, with ietf, the IETF draft headers for every
// window. They go on every response, so they are built in one buffer and
// stored under their canonical keys: fmt and Header.Set made them a third
// of a small request's cost.
func setRateLimitHeaders(h http.Header, d ratelimit.Decision, now time.Time, vals *[valSlots]string, ietf bool) {
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
	windows := d.Windows
	if !ietf {
		windows = nil
	}
	for i, win := range windows {
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
	for i, win := range windows {
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
	if len(windows) == 0 {
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

// KeySubject is the rate-limit subject of an API key's requests, as the
// chain names it (see RateLimiter).
func KeySubject(keyID string) string { return "key:" + keyID }
