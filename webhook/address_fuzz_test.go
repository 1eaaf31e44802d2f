package webhook

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/netguard"
)

// FuzzParseEndpointURL: a receiver's URL, as a client sends it, either is
// invalid_request or comes back in a canonical form that is accepted again
// unchanged: absolute http or https with a host, no user name, password or
// fragment, and, unless private receivers are allowed, no IP literal that
// is not public and no localhost. What is accepted without
// allowPrivate is accepted with it.
func FuzzParseEndpointURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/webhooks", "http://example.com:8080/a?b=c", "https://[2001:db8::1]/", "http://10.0.0.1/",
		"http://127.0.0.1:9/", "http://localhost/", "http://a.localhost./", "https://user:pw@example.com/", "https://example.com/#x",
		"https://example.com:0/", "https://example.com:65536/", "ftp://example.com/", "example.com", "https:///x", "https://x/",
		"http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]/", "HTTPS://Example.COM/%7e", "https://example.com:/", " https://example.com/",
		"https://ex%61mple.com/", "http://0x7f.1/", "https://example.com/a b", "https://example.com:08080/",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		got, err := parseEndpointURL(raw, allowPrivate)
		if err != nil {
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || got != "" {
				t.Fatalf("parse(%q) = %q, %v: want only an invalid_request error", raw, got, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("accepted %q as %q, which does not parse: %v", raw, got, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" || strings.Contains(got, "#") {
			t.Fatalf("accepted %q as %q", raw, got)
		}
		if again, err := parseEndpointURL(got, allowPrivate); err != nil || again != got {
			t.Fatalf("canonical form %q of %q parses to %q, %v", got, raw, again, err)
		}
		if allowPrivate {
			return
		}
		host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if ip, err := netip.ParseAddr(host); err == nil && !netguard.Public(ip) {
			t.Fatalf("accepted %q, whose host %s is not public", raw, ip)
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			t.Fatalf("accepted %q, which points to localhost", raw)
		}
		if other, err := parseEndpointURL(raw, true); err != nil || other != got {
			t.Fatalf("%q is accepted as %q without private receivers but as %q, %v with them", raw, got, other, err)
		}
	})
}

// FuzzRetryAfter: whatever a receiver puts in Retry-After, the wait is
// never negative, is 0 on statuses other than 429 and 503, and a value in
// seconds is read as that many seconds.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{
		"120", "0", "-1", "4294967295", "4294967296", "18446744073709551616", "+5", " 7 ", "1.5",
		"Sat, 28 Nov 2026 00:01:00 GMT", "Fri, 27 Nov 2026 00:00:00 GMT", "Sunday, 29-Nov-26 00:00:00 GMT", "Mon Jan  2 15:04:05 2006", "",
	} {
		f.Add(s, 503)
	}
	f.Fuzz(func(t *testing.T, v string, status int) {
		h := http.Header{}
		h.Set("Retry-After", v)
		d := retryAfter(status, h, now)
		if d < 0 {
			t.Fatalf("retryAfter(%d, %q) = %v < 0", status, v, d)
		}
		if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable && d != 0 {
			t.Fatalf("retryAfter(%d, %q) = %v, want 0 for that status", status, v, d)
		}
		if d > 0 && strings.TrimSpace(h.Get("Retry-After")) == "" {
			t.Fatalf("retryAfter(%d, %q) = %v without a value", status, v, d)
		}
	})
}
