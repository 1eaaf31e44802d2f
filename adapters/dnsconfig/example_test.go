package dnsconfig_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

// The customer's zone already points www at another host: the configurator
// reports it and writes only the record that does not conflict.
func Example() {
	zone := memzone.New() // any libdns provider: rfc2136.Provider in production
	zone.AddZone("example.com.")
	ctx := context.Background()
	zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.Address{Name: "www", IP: netip.MustParseAddr("203.0.113.5")},
	})

	c := dnsconfig.New(zone)
	_, findings, err := c.Configure(ctx, "example.com", []customdomain.Record{
		{Type: "CNAME", Name: "shop", Value: "stores.petstore.example", TTL: 300},
		{Type: "CNAME", Name: "www", Value: "stores.petstore.example", TTL: 300},
	})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f.Code, f.Records[0].Type, f.Records[0].Value)
	}
	// Output:
	// CONFLICTING_RECORD A 203.0.113.5
}
