package rfc2136_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/adapters/rfc2136"
)

// Setting up the provider for a BIND, Knot or PowerDNS primary that allows
// updates and transfers with the TSIG key "petstore-update.".
func ExampleProvider() {
	p := &rfc2136.Provider{
		Server:       "127.0.0.1:53",
		KeyName:      "petstore-update.",
		KeyAlgorithm: "hmac-sha256",
		KeySecret:    "base64-secret-from-the-server-config==",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.SetRecords(ctx, "example.com.", []libdns.Record{
		libdns.Address{Name: "@", TTL: 5 * time.Minute, IP: netip.MustParseAddr("192.0.2.10")},
	})
	if err != nil {
		fmt.Println("update failed:", err)
	}
}
