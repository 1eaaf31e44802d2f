package httpx

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzClientAddr: the client address the limiter counts is the TCP peer
// or, only when the peer is a trusted proxy, an X-Forwarded-For entry
// that is not one; forged entries left of an unparsable one are never
// used.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.1:443", "203.0.113.9, 10.0.0.2")
	f.Add("[::ffff:10.0.0.1]:1", "::ffff:198.51.100.1")
	f.Add("198.51.100.7:80", "203.0.113.9")
	f.Add("10.0.0.1:443", "203.0.113.9, junk, 10.0.0.3")
	f.Add("garbage", "1.2.3.4")
	f.Add("10.0.0.1", "")
	f.Fuzz(func(t *testing.T, remote, xff string) {
		l := &limits{Config: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": {xff}}}
		got, peer := l.client(r), parseAddr(remote)
		if peer.Is4In6() {
			t.Fatalf("parseAddr(%q) = %v, not unmapped", remote, peer)
		}
		if got == peer {
			return
		}
		if !l.trusted(peer) || l.trusted(got) || !got.IsValid() {
			t.Fatalf("client(%q, X-Forwarded-For %q) = %v", remote, xff, got)
		}
		hops := strings.Split(xff, ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				t.Fatalf("client(%q, X-Forwarded-For %q) = %v, left of the unparsable %q", remote, xff, got, hops[i])
			}
			if a.Unmap() == got {
				return
			}
		}
		t.Fatalf("client(%q, X-Forwarded-For %q) = %v, which it does not hold", remote, xff, got)
	})
}

// FuzzHeaderLists: If-None-Match and Content-Encoding lists a client
// sends never panic the readers, "*" or the entity tag itself in any
// position matches, and identity is whatever names no other coding.
func FuzzHeaderLists(f *testing.F) {
	f.Add(`"a", W/"b"`, "gzip, identity")
	f.Add("*", "")
	f.Add(`,,W/`, "IDENTITY,,")
	f.Fuzz(func(t *testing.T, inm, ce string) {
		const etag = `"e1"`
		if !noneMatch([]string{inm + "," + etag}, etag) || !noneMatch([]string{"*, " + inm}, etag) {
			t.Fatalf("If-None-Match %q with %s or * does not match", inm, etag)
		}
		other := false
		for c := range strings.SplitSeq(ce, ",") {
			c = strings.TrimSpace(c)
			other = other || c != "" && !strings.EqualFold(c, "identity")
		}
		if isIdentity([]string{ce}) == other {
			t.Fatalf("isIdentity(%q) = %v", ce, !other)
		}
	})
}
