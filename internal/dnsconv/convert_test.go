package dnsconv_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/petstorekit/petstore/internal/dnsconv"
)

func TestConvertRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   libdns.Record
	}{
		{"A", libdns.Address{Name: "www", TTL: time.Minute, IP: netip.MustParseAddr("192.0.2.1")}},
		{"AAAA apex", libdns.Address{Name: "@", TTL: time.Minute, IP: netip.MustParseAddr("2001:db8::1")}},
		{"CNAME", libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "stores.example.net."}},
		{"CAA critical", libdns.CAA{Name: "@", Flags: 128, Tag: "issue", Value: `ca.example; account=1`}},
		{"TXT escapes", libdns.TXT{Name: "_t", Text: "a \"b\" \\c \x00 é"}},
		{"MX", libdns.MX{Name: "@", Preference: 10, Target: "mx.example.net."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr, err := dnsconv.ToDNS("example.com.", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			// Through the wire, as a server would return it.
			msg := new(dns.Msg)
			msg.Answer = []dns.RR{rr}
			buf, err := msg.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if err := msg.Unpack(buf); err != nil {
				t.Fatal(err)
			}
			out, err := dnsconv.FromDNS("example.com.", msg.Answer[0])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out.RR(), tt.in.RR(); got != want {
				t.Fatalf("round trip = %#v, want %#v", got, want)
			}
		})
	}
}

// TestConvertTypeCasing: a record type is read case-insensitively, as
// DNS types are; "CaA" once panicked because libdns parses it as given.
func TestConvertTypeCasing(t *testing.T) {
	for _, typ := range []string{"CAA", "caa", "CaA", " cAa "} {
		rr, err := dnsconv.ToDNS("example.com.", libdns.RR{Name: "@", Type: typ, Data: `0 issue "letsencrypt.org"`})
		if err != nil {
			t.Fatalf("%q: %v", typ, err)
		}
		caa, ok := rr.(*dns.CAA)
		if !ok || caa.Tag != "issue" || caa.Value != "letsencrypt.org" {
			t.Fatalf("%q converted to %v", typ, rr)
		}
	}
	for _, typ := range []string{"caa", "CaA"} {
		if _, err := dnsconv.ToDNS("example.com.", libdns.RR{Name: "@", Type: typ, Data: `x issue "ca"`}); err == nil {
			t.Fatalf("%q with bad data accepted", typ)
		}
	}
}

// FuzzConvert checks that any record ToDNS accepts survives the wire and
// comes back from FromDNS with the same name, type and TTL.
func FuzzConvert(f *testing.F) {
	f.Add("www", "A", "192.0.2.1", uint32(60))
	f.Add("@", "CAA", `0 issue "letsencrypt.org"`, uint32(0))
	f.Add("_x", "TXT", "\"\\\x00", uint32(1))
	f.Add("a.b", "CNAME", "t.example.net", uint32(300))
	f.Add("s", "SRV", "1 2 3 t.example.net.", uint32(300))
	f.Fuzz(func(t *testing.T, name, typ, data string, ttl uint32) {
		in := libdns.RR{Name: name, Type: typ, Data: data, TTL: time.Duration(ttl%(1<<31)) * time.Second}
		rr, err := dnsconv.ToDNS("example.com.", in)
		if err != nil {
			return
		}
		msg := new(dns.Msg)
		msg.Answer = []dns.RR{rr}
		buf, err := msg.Pack()
		if err != nil {
			return // e.g. over-long data: refused when sent
		}
		if err := msg.Unpack(buf); err != nil {
			t.Fatalf("packed record does not unpack: %v", err)
		}
		out, err := dnsconv.FromDNS("example.com.", msg.Answer[0])
		if err != nil {
			t.Fatal(err)
		}
		got := out.RR()
		if got.Type != dns.TypeToString[rr.Header().Rrtype] || got.TTL != in.TTL {
			t.Fatalf("round trip of %#v gave %#v", in, got)
		}
		again, err := dnsconv.ToDNS("example.com.", out)
		if err != nil {
			t.Fatalf("FromDNS output %#v not accepted by ToDNS: %v", got, err)
		}
		// Compare as the wire carries them: ToDNS holds escaped text.
		msg2 := &dns.Msg{Answer: []dns.RR{again}}
		buf2, err := msg2.Pack()
		if err != nil {
			t.Fatalf("second pack: %v", err)
		}
		if err := msg2.Unpack(buf2); err != nil {
			t.Fatal(err)
		}
		if !dns.IsDuplicate(msg2.Answer[0], msg.Answer[0]) {
			t.Fatalf("second round trip changed %v into %v", msg.Answer[0], again)
		}
	})
}
