package client

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// warnDeprecated logs, once per operation, that the answer h of op marks
// op deprecated (see WithLogger).
func (c *Client) warnDeprecated(ctx context.Context, op string, h http.Header) {
	dep := h.Get("Deprecation")
	if dep == "" {
		return
	}
	c.mu.Lock()
	warned := c.warned[op]
	if !warned {
		if c.warned == nil {
			c.warned = map[string]bool{}
		}
		c.warned[op] = true
	}
	c.mu.Unlock()
	if warned {
		return
	}
	attrs := []slog.Attr{slog.String("operation", op)}
	if t, ok := parseDeprecation(dep); ok {
		attrs = append(attrs, slog.Time("deprecation", t))
	} else {
		attrs = append(attrs, slog.String("deprecation", truncate(dep)))
	}
	if t, err := http.ParseTime(h.Get("Sunset")); err == nil {
		attrs = append(attrs, slog.Time("sunset", t.UTC()))
	}
	if s, _, _ := parseLinkRel(h.Values("Link"), "successor-version"); s != "" {
		attrs = append(attrs, slog.String("successor", truncate(s)))
	}
	c.logger.LogAttrs(ctx, slog.LevelWarn, "petstore API operation is deprecated", attrs...)
}

// parseDeprecation parses a Deprecation header (RFC 9745): a structured
// field Date, "@" and Unix seconds.
func parseDeprecation(v string) (time.Time, bool) {
	secs, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), "@"), 10, 64)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(v), "@") || secs < 0 || secs > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0).UTC(), true
}

// truncate bounds a header value logged as the server sent it to 200
// bytes, cut before the character byte 200 is in rather than inside it.
func truncate(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	// A character is at most utf8.UTFMax bytes: any further back, s is
	// not UTF-8 there, and is cut at the limit.
	n := limit
	for n > limit-utf8.UTFMax+1 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
