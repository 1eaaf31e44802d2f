package customdomain_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// A wildcard one label above one of the platform's names covers it: its
// certificate (*.example.com) is valid for api.example.com, and the
// engine admits api.example.com's handshakes with it, so a customer's
// wildcard would answer TLS for the platform's own host. It is refused,
// as the zone of the CNAME target is; names beside the platform's, and
// wildcards further up or down, are the customer's.
func TestWildcardAbovePlatformNameIsRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	e := f.replica(t, func(c *customdomain.EngineConfig) {
		c.PlatformDomains = append(c.PlatformDomains, "api.example.com", "*.apps.example.org")
	})
	for _, name := range []string{"*.example.com", "api.example.com", "*.api.example.com", "*.apps.example.org", "a.apps.example.org"} {
		if _, _, err := e.Add(ctx, "prj_pro", name); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
			t.Errorf("Add(%s) = %v, want invalid_request: it covers a platform name", name, err)
		}
	}
	for _, name := range []string{"*.shop.example.com", "shop.example.com", "*.example.org"} {
		if _, _, err := e.Add(ctx, "prj_pro", name); err != nil {
			t.Fatalf("Add(%s), a customer's name: %v", name, err)
		}
	}
}
