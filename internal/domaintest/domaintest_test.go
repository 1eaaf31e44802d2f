package domaintest_test

import (
	"context"
	"testing"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// A World's replicas share its store and DNS server: a domain one adds
// and verifies against the World's records is served by another after
// it refreshes, and a plan change reaches both.
func TestReplicasShareStoreDNSAndProjects(t *testing.T) {
	ctx := context.Background()
	projects := domaintest.NewProjects(customdomain.Project{ID: "prj", Plan: petstore.PlanPro, Deployed: true})
	w := domaintest.New(t, domaintest.Options{Projects: projects})
	w.Set(t, "example.com.", libdns.CNAME{Name: "shop", Target: domaintest.Target + "."})
	if _, _, err := w.Engine.Add(ctx, "prj", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	other := w.Replica(t, nil)
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Route("shop.example.com"); got.Kind != customdomain.RouteServe || got.ProjectID != "prj" {
		t.Fatalf("replica routes %+v, want it served for prj", got)
	}

	projects.SetPlan("prj", petstore.PlanFree)
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Route("shop.example.com"); got.Kind != customdomain.RouteNone {
		t.Fatalf("after a downgrade the replica routes %+v, want none", got)
	}
	if p, ok := projects.Lookup("prj"); !ok || p.Plan != petstore.PlanFree || !p.Deployed {
		t.Fatalf("Lookup = %+v, %v", p, ok)
	}
	if _, err := projects.Project(ctx, "prj_unknown"); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("unknown project: %v, want not_found", err)
	}
}
