package dnsconfig

import (
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
)

// FuzzSame: records as a DNS provider's API returns them, of any type and
// data, are compared without panicking, each the same as itself and in
// either order alike.
func FuzzSame(f *testing.F) {
	f.Add("www", "A", "192.0.2.1", "WWW", "A", "::ffff:192.0.2.1")
	f.Add("@", "CNAME", "edge.example.net.", "@", "CNAME", "Edge.Example.NET")
	f.Add("@", "CAA", `0 issue "letsencrypt.org"`, "@", "CAA", `0 ISSUE "letsencrypt.org"`)
	f.Add("x", "A", "not an ip", "x", "A", "not an ip")
	f.Add("x", "MX", "10 mx.example.com.", "x", "HTTPS", "1 . alpn=h2")
	f.Fuzz(func(t *testing.T, an, at, ad, bn, bt, bd string) {
		a := libdns.RR{Name: an, Type: at, Data: ad, TTL: time.Minute}
		b := libdns.RR{Name: bn, Type: bt, Data: bd, TTL: time.Hour}
		if !same(a, a) || !same(b, b) {
			t.Fatalf("a record is not the same as itself: %+v or %+v", a, b)
		}
		if same(a, b) != same(b, a) {
			t.Fatalf("same(%+v, %+v) = %v, the other way round %v", a, b, same(a, b), same(b, a))
		}
	})
}

// FuzzToLibdns: a record the engine asks for is either written as a
// libdns record of its type, named relative to the zone, which toDomain
// reads back with that type, or reported as unsupported with the record
// attached.
func FuzzToLibdns(f *testing.F) {
	f.Add("example.com", "A", "shop.example.com", "192.0.2.1", 300)
	f.Add("example.com.", "cname", "WWW.Example.com.", " Edge.Example.NET. ", 0)
	f.Add("example.com", "CAA", "@", `0 issue "letsencrypt.org"`, -1)
	f.Add("example.com", "AAAA", "x", "::ffff:1.2.3.4", 1)
	f.Add("example.com", "TXT", "_petstore.shop", "tok", 1<<40)
	f.Fuzz(func(t *testing.T, zone, typ, name, value string, ttl int) {
		r := customdomain.Record{Type: typ, Name: name, Value: value, TTL: ttl}
		rec, finding := toLibdns(zone, r)
		if (rec == nil) == (finding == nil) {
			t.Fatalf("toLibdns(%q, %+v) = %v, %v", zone, r, rec, finding)
		}
		if finding != nil {
			if finding.Code != CodeUnsupportedRecord || len(finding.Records) != 1 || finding.Records[0] != r {
				t.Fatalf("toLibdns(%q, %+v) finding %+v", zone, r, finding)
			}
			return
		}
		rr := rec.RR()
		if rr.TTL <= 0 || !same(rec, rec) || toDomain(rec).Type != rr.Type {
			t.Fatalf("toLibdns(%q, %+v) = %+v", zone, r, rr)
		}
	})
}
