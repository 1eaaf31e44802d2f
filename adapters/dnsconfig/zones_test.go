package dnsconfig_test

import (
	"context"
	"slices"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/customdomain"
)

// TestZones: the platform's own DNS writes records in the deepest zone it
// manages that holds them (a zone below the registered domain), refuses a
// name outside its zones, and deletes only what it wrote.
func TestZones(t *testing.T) {
	const managed = "customers.example.com."
	for _, b := range rfc2136test.Backends(t, managed) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			z := dnsconfig.NewZones(b.Provider, "Customers.Example.com.")
			for name, want := range map[string]bool{
				"shop.acme.customers.example.com": true, "customers.example.com": true,
				"example.com": false, "shop.example.com": false, "xcustomers.example.com": false,
			} {
				if got := z.Manages(name); got != want {
					t.Errorf("Manages(%s) = %v, want %v", name, got, want)
				}
			}
			// As the engine asks: relative to the registered domain.
			recs := []customdomain.Record{
				{Type: "CNAME", Name: "shop.acme.customers", Value: "edge.petstore.test"},
				{Type: "TXT", Name: "_petstore-challenge.shop.acme.customers", Value: "token-1"},
			}
			created, f, err := z.Configure(ctx, "example.com", recs)
			if err != nil || len(f) != 0 {
				t.Fatalf("Configure = %v, %v", f, err)
			}
			var names []string
			for _, r := range created {
				names = append(names, r.Type+" "+r.Name)
			}
			slices.Sort(names)
			if want := []string{"CNAME shop.acme.customers", "TXT _petstore-challenge.shop.acme.customers"}; !slices.Equal(names, want) {
				t.Errorf("created %v, want %v (named as asked)", names, want)
			}
			if got := zoneAt(t, b.Provider, managed, "shop.acme"); !slices.Equal(got, []string{"CNAME edge.petstore.test."}) {
				t.Errorf("shop.acme in %s = %v", managed, got)
			}
			if got := zoneAt(t, b.Provider, managed, "_petstore-challenge.shop.acme"); len(got) != 1 {
				t.Errorf("ownership record = %v", got)
			}

			_, _, err = z.Configure(ctx, "example.com", []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "edge.petstore.test"}})
			if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Errorf("Configure outside the zones: %v, want invalid_request", err)
			}

			if err := z.Unconfigure(ctx, "example.com", created); err != nil {
				t.Fatal(err)
			}
			if got := zoneAt(t, b.Provider, managed, "shop.acme"); len(got) != 0 {
				t.Errorf("after Unconfigure shop.acme = %v", got)
			}
		})
	}
}
