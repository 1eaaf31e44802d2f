package memzone_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/memzone"
)

// A test DNS server: write records through libdns, query them over DNS.
func Example() {
	p := memzone.New()
	p.AddZone("example.com.")
	srv, err := p.Serve("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	_, err = p.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: 5 * time.Minute, Target: "stores.petstore.example."},
		libdns.Address{Name: "@", TTL: 5 * time.Minute, IP: netip.MustParseAddr("192.0.2.10")},
	})
	if err != nil {
		panic(err)
	}

	m := new(dns.Msg)
	m.SetQuestion("shop.example.com.", dns.TypeA)
	resp, err := dns.Exchange(m, srv.Addr())
	if err != nil {
		panic(err)
	}
	fmt.Println(dns.RcodeToString[resp.Rcode], resp.Answer[0].(*dns.CNAME).Target)

	m.SetQuestion("missing.example.com.", dns.TypeA)
	resp, _ = dns.Exchange(m, srv.Addr())
	fmt.Println(dns.RcodeToString[resp.Rcode])
	// Output:
	// NOERROR stores.petstore.example.
	// NXDOMAIN
}
