package dnsconfig_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

// BenchmarkConfigureUnconfigure measures a full write, read-back and removal
// of a subdomain's CNAME on memzone (the configurator's own cost).
func BenchmarkConfigureUnconfigure(b *testing.B) {
	z := memzone.New()
	z.AddZone("example.com.")
	c := dnsconfig.New(z)
	ctx := context.Background()
	recs := []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example", TTL: 300}}
	b.ReportAllocs()
	for b.Loop() {
		created, f, err := c.Configure(ctx, "example.com", recs)
		if err != nil || len(f) != 0 {
			b.Fatal(f, err)
		}
		if err := c.Unconfigure(ctx, "example.com", created); err != nil {
			b.Fatal(err)
		}
	}
}
