package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds what a Retry-After header may ask for, so a
// malicious or broken server cannot park a client for years.
const maxRetryAfter = 48 * time.Hour

// retryAfter reads the Retry-After of an answer with headers h, an
// HTTP-date measured from answerTime(h, now).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return parseRetryAfter(h.Get("Retry-After"), answerTime(h, now))
}

// answerTime is when the answer with headers h was made on the server's
// clock: its Date, else now, the client's clock. A time the server names
// (a Retry-After date, X-RateLimit-Reset) is on its clock, so the wait
// it asks for is measured from Date (RFC 9110 §10.2.3): measured from a
// client's clock that runs fast, it would end before the server's time.
func answerTime(h http.Header, now time.Time) time.Time {
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		return date
	}
	return now
}

// parseRetryAfter parses a Retry-After value (RFC 9110 §10.2.3): either
// delay-seconds or an HTTP-date, which is turned into a delay from now. A
// date in the past gives 0. ok is false for an absent or malformed value.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if len(strings.TrimLeft(v, "0123456789")) != 0 {
				return 0, false
			}
			return maxRetryAfter, true // all digits, but overflowing: "very long"
		}
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > maxRetryAfter:
		return maxRetryAfter, true
	}
	return d, true
}

// parseLinkNext returns the target of the first link with relation "next"
// in one or more Link header values (RFC 8288); ok is false when there is
// none. An empty target ("<>") is a link: to the page it came with. bad
// is, when there is none, the first value with a link that does not
// parse, which may have been the next one; "" when every link parsed.
func parseLinkNext(values []string) (target string, ok bool, bad string) {
	return parseLinkRel(values, "next")
}

// parseLinkRel returns the target of the first link with relation rel in
// one or more Link header values (RFC 8288); ok is false when there is
// none, and bad is then the first value with a link that does not parse
// (see parseLinkValue), "" when every link parsed. Relations are matched
// case-insensitively and may be one of several in a space-separated rel
// value.
func parseLinkRel(values []string, rel string) (target string, ok bool, bad string) {
	for _, v := range values {
		for rest := v; len(rest) > 0; {
			var rels []string
			var parsed bool
			target, rels, rest, parsed = parseLinkValue(rest)
			if !parsed && bad == "" {
				bad = v
			}
			for _, r := range rels {
				if strings.EqualFold(r, rel) {
					return target, true, ""
				}
			}
		}
	}
	return "", false, bad
}

// parseLinkValue parses one link-value from the start of s:
// `<target>; param=value; rel="a b"`, and returns the target, the rel
// relation types, the rest of s after the separating comma, and whether
// it parsed. Malformed input (no "<target>", or text after the
// parameters) yields ok false, no target and no relations, and skips to
// the next comma outside quotes; s holding only spaces and commas is no
// link, and no error.
func parseLinkValue(s string) (target string, rels []string, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t,")
	if s == "" {
		return "", nil, "", true
	}
	if !strings.HasPrefix(s, "<") {
		return "", nil, skipPastComma(s), false
	}
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "", nil, "", false
	}
	target, s = s[1:end], s[end+1:]
	for {
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ";") {
			break
		}
		s = strings.TrimLeft(s[1:], " \t")
		i := strings.IndexAny(s, "=;,")
		if i < 0 {
			return target, rels, "", true
		}
		name := strings.TrimSpace(s[:i])
		var val string
		if s[i] == '=' {
			s = strings.TrimLeft(s[i+1:], " \t")
			val, s = parseParamValue(s)
		} else {
			s = s[i:]
		}
		if strings.EqualFold(name, "rel") && rels == nil {
			rels = strings.Fields(val)
		}
	}
	if !strings.HasPrefix(s, ",") && s != "" {
		return "", nil, skipPastComma(s), false
	}
	return target, rels, strings.TrimPrefix(s, ","), true
}

// parseParamValue reads a token or a quoted-string from the start of s.
func parseParamValue(s string) (val, rest string) {
	if !strings.HasPrefix(s, `"`) {
		i := strings.IndexAny(s, ";, \t")
		if i < 0 {
			return s, ""
		}
		return s[:i], s[i:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), "" // unterminated: take what there is
}

// skipPastComma drops s up to and including the next comma that is not
// inside a quoted string.
func skipPastComma(s string) string {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if inQuote {
				i++
			}
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				return s[i+1:]
			}
		}
	}
	return ""
}

// RateLimit is the rate-limit state the server reported on a response,
// from the X-RateLimit-* headers; Client.RateLimit says which response.
type RateLimit struct {
	Limit     int64     // requests allowed in the current window
	Remaining int64     // requests left in it
	Reset     time.Time // when it starts over
}

// parseRateLimit reads the X-RateLimit-* headers; ok is false when the
// response carries none (or malformed ones).
func parseRateLimit(h http.Header) (rl RateLimit, ok bool) {
	limit, err1 := strconv.ParseInt(h.Get("X-RateLimit-Limit"), 10, 64)
	rem, err2 := strconv.ParseInt(h.Get("X-RateLimit-Remaining"), 10, 64)
	reset, err3 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || reset < 0 || reset > 1<<40 {
		return RateLimit{}, false
	}
	return RateLimit{Limit: limit, Remaining: rem, Reset: time.Unix(reset, 0)}, true
}
