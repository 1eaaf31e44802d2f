package dnsresolver

import (
	"testing"

	"github.com/miekg/dns"
)

// FuzzRecords feeds arbitrary DNS responses to the answer filter: whatever a
// server sends, only records owned by the queried name and of the queried
// type come back, and nothing panics.
func FuzzRecords(f *testing.F) {
	for _, rr := range []string{
		"shop.example.com. 3600 IN CNAME edge.example.net.",
		"shop.example.com. 300 IN A 203.0.113.9",
		"other.example.com. 300 IN AAAA 2001:db8::1",
		`shop.example.com. 300 IN CAA 0 issue "letsencrypt.org"`,
	} {
		m := new(dns.Msg)
		m.SetQuestion("shop.example.com.", dns.TypeA)
		r, err := dns.NewRR(rr)
		if err != nil {
			f.Fatal(err)
		}
		m.Answer = append(m.Answer, r)
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(dns.TypeA))
	}
	f.Fuzz(func(t *testing.T, wire []byte, qtype uint16) {
		m := new(dns.Msg)
		if m.Unpack(wire) != nil {
			return
		}
		for _, r := range records(m, "shop.example.com.", qtype) {
			if r.Name != "shop.example.com" || r.Type != dns.TypeToString[qtype] {
				t.Fatalf("record %+v is not a %s record of shop.example.com", r, dns.TypeToString[qtype])
			}
		}
	})
}
