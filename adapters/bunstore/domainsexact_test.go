package bunstore_test

import (
	"context"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/customdomain"
)

// TestDomainsCompareNamesAndProjectsExactly: a project id or a name that
// differs from a stored one by trailing spaces is another project or
// name on every database. MariaDB's utf8mb4_bin collation pads with
// spaces, so "prj_a " used to read prj_a's domains and config, overwrite
// that config, and hold prj_a's name.
func TestDomainsCompareNamesAndProjectsExactly(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := bunstore.New(b.open(t))
			e := customdomain.Entry{ID: "dom_a", ProjectID: "prj_a", Name: "shop.example.com", Status: customdomain.StatusPending}
			if _, err := s.CreateDomain(ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := s.PutDomainConfig(ctx, customdomain.Config{ProjectID: "prj_a", Primary: "shop.example.com"}); err != nil {
				t.Fatal(err)
			}

			if got, err := s.ListDomains(ctx, customdomain.DomainQuery{ProjectID: "prj_a "}); err != nil || len(got) != 0 {
				t.Errorf("ListDomains(prj_a ) = %d entries, %v; want none", len(got), err)
			}
			if got, err := s.ListDomains(ctx, customdomain.DomainQuery{Name: "shop.example.com "}); err != nil || len(got) != 0 {
				t.Errorf("ListDomains(name with a trailing space) = %d entries, %v; want none", len(got), err)
			}
			if got, err := s.DomainByName(ctx, "shop.example.com "); petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Errorf("DomainByName(name with a trailing space) = %+v, %v; want not_found", got, err)
			}
			if c, err := s.DomainConfig(ctx, "prj_a "); err != nil || c.Primary != "" {
				t.Errorf("DomainConfig(prj_a ) = %+v, %v; want an empty config", c, err)
			}
			if err := s.PutDomainConfig(ctx, customdomain.Config{ProjectID: "prj_a ", Primary: "other.example.com"}); err != nil {
				t.Fatal(err)
			}
			if c, err := s.DomainConfig(ctx, "prj_a"); err != nil || c.Primary != "shop.example.com" {
				t.Errorf("prj_a's config after prj_a 's was stored = %+v, %v; want its own primary", c, err)
			}
			other := customdomain.Entry{ID: "dom_b", ProjectID: "prj_b", Name: "shop.example.com ", Status: customdomain.StatusPending}
			if _, err := s.CreateDomain(ctx, other); err != nil {
				t.Errorf("CreateDomain(name with a trailing space) = %v; want it stored as a name of its own", err)
			}
			if got, err := s.DomainByName(ctx, "shop.example.com"); err != nil || got.ProjectID != "prj_a" {
				t.Errorf("DomainByName(shop.example.com) = %+v, %v; want prj_a's", got, err)
			}
		})
	}
}
