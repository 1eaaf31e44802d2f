package client

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 12 ", 12 * time.Second, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{"1.5", 0, false},
		{"-3", 0, false},
		{"12abc", 0, false},
		{"Sun, 22 Nov 2026 10:00:30 GMT", 30 * time.Second, true},
		{"Sun, 22 Nov 2026 09:00:00 GMT", 0, true},
		{"Sunday, 22-Nov-26 10:01:00 GMT", time.Minute, true},
		{"Sun Nov 22 10:00:05 2026", 5 * time.Second, true},
		{"Fri, 01 Jan 2100 00:00:00 GMT", maxRetryAfter, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseLinkNext(t *testing.T) {
	tests := []struct {
		name   string
		in     []string
		want   string
		wantOK bool
		bad    bool // a link did not parse, and none was next
	}{
		{"none", nil, "", false, false},
		{"empty: the page itself", []string{`<>; rel="next"`}, "", true, false},
		{"simple", []string{`</v1/pets?cursor=abc>; rel="next"`}, "/v1/pets?cursor=abc", true, false},
		{"unquoted", []string{`</v1/pets?cursor=abc>; rel=next`}, "/v1/pets?cursor=abc", true, false},
		{"case", []string{`<a>; REL="Next"`}, "a", true, false},
		{"multi rel", []string{`<x>; rel="prev next"`}, "x", true, false},
		{"second link", []string{`</v1/pets>; rel="successor-version", </v1/pets?cursor=z>; rel="next"`}, "/v1/pets?cursor=z", true, false},
		{"second header", []string{`<p>; rel="prev"`, `<n>; rel="next"`}, "n", true, false},
		{"comma in quoted param", []string{`<a>; title="x, rel=next", <b>; rel="next"`}, "b", true, false},
		{"other params", []string{`<n>; type="application/json"; rel="next"; title="more"`}, "n", true, false},
		{"only first rel counts", []string{`<n>; rel="prev"; rel="next"`}, "", false, false},
		{"not next", []string{`<a>; rel="nextpage"`}, "", false, false},
		{"garbage then link", []string{`garbage, <n>; rel=next`}, "n", true, false},
		{"unterminated", []string{`<n; rel=next`}, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok, bad := parseLinkNext(tt.in); got != tt.want || ok != tt.wantOK || (bad != "") != tt.bad {
				t.Fatalf("parseLinkNext(%q) = %q, %v, bad %q; want %q, %v, bad %v", tt.in, got, ok, bad, tt.want, tt.wantOK, tt.bad)
			}
		})
	}
}

func TestParseRateLimit(t *testing.T) {
	h := http.Header{}
	if _, ok := parseRateLimit(h); ok {
		t.Fatal("no headers parsed as a rate limit")
	}
	h.Set("X-RateLimit-Limit", "60")
	h.Set("X-RateLimit-Remaining", "59")
	h.Set("X-RateLimit-Reset", "1795000000")
	rl, ok := parseRateLimit(h)
	if !ok || rl.Limit != 60 || rl.Remaining != 59 || !rl.Reset.Equal(time.Unix(1795000000, 0)) {
		t.Fatalf("parseRateLimit = %+v, %v", rl, ok)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "Sun, 22 Nov 2026 10:00:30 GMT", "99999999999999999999", "1e3", "\x00"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v, outside [0, %v]", s, d, maxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %v with ok false", s, d)
		}
	})
}

func FuzzParseLinkNext(f *testing.F) {
	for _, s := range []string{
		`</v1/pets?cursor=abc>; rel="next"`,
		`<a>; title="x, rel=next", <b>; rel=next`,
		`<n; rel=next`, `<>; rel=next`, `"`, `<a>;;;=,`, `<a>; rel="\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok, _ := parseLinkNext([]string{s})
		if len(got) > len(s) {
			t.Fatalf("parseLinkNext(%q) = %q, longer than its input", s, got)
		}
		// Whatever precedes a well-formed next link cannot hide it once it
		// starts after a comma outside quotes.
		if got2, _, _ := parseLinkNext([]string{s, `<z>; rel=next`}); !ok && got2 != "z" {
			t.Fatalf("a second header's next link was lost after %q: %q", s, got2)
		}
	})
}

func TestRateLimitWait(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c, err := New("http://127.0.0.1/v1", "k", WithClock(func() time.Time { return now }, nil), WithBackoff(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	reset := func(d time.Duration) http.Header {
		h := http.Header{}
		h.Set("X-RateLimit-Limit", "60")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", fmt.Sprint(now.Add(d).Unix()))
		return h
	}
	withRetryAfter := reset(40 * time.Second)
	withRetryAfter.Set("Retry-After", "7")
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"Retry-After wins", withRetryAfter, 7 * time.Second},
		{"reset without Retry-After", reset(40 * time.Second), 40 * time.Second},
		{"reset in the past falls back to backoff", reset(-time.Minute), 0},
		{"nothing falls back to backoff", http.Header{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.rateLimitWait(tt.h, 1); got != tt.want {
				t.Fatalf("rateLimitWait = %v, want %v", got, tt.want)
			}
		})
	}
}
