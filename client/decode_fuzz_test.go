package client

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
)

// FuzzParseRateLimit: the X-RateLimit-* headers a server sends are used
// only when all three are integers and the reset is a time from 1970 to
// 2^40 s after; what is read is what they say, and writing it back reads
// the same.
func FuzzParseRateLimit(f *testing.F) {
	f.Add("60", "59", "1795000000")
	f.Add("", "1", "2")
	f.Add("1", "2", "-1")
	f.Add("+1", "-5", "1099511627777")
	f.Add("0x10", "1_0", " 3")
	f.Fuzz(func(t *testing.T, limit, remaining, reset string) {
		h := http.Header{}
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		rl, ok := parseRateLimit(h)
		if !ok {
			if rl != (RateLimit{}) {
				t.Fatalf("parseRateLimit(%q, %q, %q) = %+v with ok false", limit, remaining, reset, rl)
			}
			return
		}
		l, _ := strconv.ParseInt(h.Get("X-RateLimit-Limit"), 10, 64)
		r, _ := strconv.ParseInt(h.Get("X-RateLimit-Remaining"), 10, 64)
		if rl.Limit != l || rl.Remaining != r || rl.Reset.Unix() < 0 || rl.Reset.Unix() > 1<<40 {
			t.Fatalf("parseRateLimit(%q, %q, %q) = %+v", limit, remaining, reset, rl)
		}
		back := http.Header{}
		back.Set("X-RateLimit-Limit", strconv.FormatInt(rl.Limit, 10))
		back.Set("X-RateLimit-Remaining", strconv.FormatInt(rl.Remaining, 10))
		back.Set("X-RateLimit-Reset", strconv.FormatInt(rl.Reset.Unix(), 10))
		if again, ok := parseRateLimit(back); !ok || again != rl {
			t.Fatalf("%+v written back reads %+v, %v", rl, again, ok)
		}
	})
}

// FuzzParseDeprecation: a Deprecation header is read only as "@" and Unix
// seconds from 1970 to 2^40, in UTC, and the date written back in that
// form reads the same.
func FuzzParseDeprecation(f *testing.F) {
	for _, s := range []string{"@1795000000", " @0 ", "@-1", "@1099511627777", "1795000000", "@", "@+5", "@1.5", "Sat, 28 Nov 2026 00:00:00 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		at, ok := parseDeprecation(v)
		if !ok {
			if !at.IsZero() {
				t.Fatalf("parseDeprecation(%q) = %v with ok false", v, at)
			}
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(v), "@") || at.Location() != time.UTC || at.Unix() < 0 || at.Unix() > 1<<40 {
			t.Fatalf("parseDeprecation(%q) = %v", v, at)
		}
		if again, ok := parseDeprecation("@" + strconv.FormatInt(at.Unix(), 10)); !ok || !again.Equal(at) {
			t.Fatalf("%v written back reads %v, %v", at, again, ok)
		}
	})
}

// FuzzDecodeError: whatever an error answer's body and Location are, the
// caller gets a *petstore.Error with a code and the answer's status; a
// petstore Error body keeps its code and message.
func FuzzDecodeError(f *testing.F) {
	f.Add(404, `{"code":"not_found","message":"pet 1 not found"}`, "")
	f.Add(502, "<html>bad gateway</html>", "")
	f.Add(302, "", "https://evil.example/steal?key=1")
	f.Add(301, "", "/v1/pets/2")
	f.Add(429, `{"code":""}`, "%zz")
	f.Add(700, `null`, "//x")
	f.Fuzz(func(t *testing.T, status int, body, location string) {
		req := &http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "https", Host: "api.example.com", Path: "/v1/pets"}}
		resp := &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " X", Header: http.Header{}, Request: req}
		if location != "" {
			resp.Header.Set("Location", location)
		}
		e := decodeError(resp, []byte(body))
		if e == nil || e.Code == "" || e.Status != status {
			t.Fatalf("decodeError(%d, %q, %q) = %#v", status, body, location, e)
		}
		if petstore.ErrorCode(e) != e.Code {
			t.Fatalf("decodeError(%d, %q) = %#v, whose code errors.As does not find", status, body, e)
		}
	})
}
