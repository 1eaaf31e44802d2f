package memzone_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/memzone"
)

// BenchmarkQueryUDP measures one A query answered over loopback UDP from a
// zone of 1000 names.
func BenchmarkQueryUDP(b *testing.B) {
	p, s := memzone.NewTestServer(b, "example.com.")
	var recs []libdns.Record
	for i := range 1000 {
		recs = append(recs, libdns.Address{Name: fmt.Sprintf("h%d", i), IP: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})})
	}
	if _, err := p.AppendRecords(context.Background(), "example.com.", recs); err != nil {
		b.Fatal(err)
	}
	c := new(dns.Client)
	m := new(dns.Msg)
	m.SetQuestion("h500.example.com.", dns.TypeA)
	b.ReportAllocs()
	for b.Loop() {
		resp, _, err := c.Exchange(m, s.Addr())
		if err != nil || len(resp.Answer) != 1 {
			b.Fatalf("%v %v", resp, err)
		}
	}
}

// BenchmarkAppend measures adding one record to a zone through libdns.
func BenchmarkAppend(b *testing.B) {
	p := memzone.New()
	p.AddZone("example.com.")
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if _, err := p.AppendRecords(ctx, "example.com.", []libdns.Record{libdns.TXT{Name: "t", Text: fmt.Sprint(i)}}); err != nil {
			b.Fatal(err)
		}
		if i%500 == 0 { // keep the zone small so the run measures appends, not zone size
			p.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "t"}})
		}
	}
}
