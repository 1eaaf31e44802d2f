package customdomain_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// TestSuspendedDomainStaysUnservedWhileThePlanCannotBeRead: a project
// below Pro has its domains suspended (the edge answers 404 for them).
// When the platform cannot say what its plan is for a while (its lookup
// fails), the periodic reload keeps what it knew: the domains stay
// unserved rather than served to a project that did not pay for them,
// and a project on Pro stays served.
func TestSuspendedDomainStaysUnservedWhileThePlanCannotBeRead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	p := domaintest.NewProjects(
		customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true},
		customdomain.Project{ID: "prj_b", Plan: petstore.PlanPro, Deployed: true})
	var down atomic.Bool
	flaky := customdomain.ProjectsFunc(func(ctx context.Context, id string) (customdomain.Project, error) {
		if down.Load() {
			return customdomain.Project{}, petstore.Errorf(petstore.CodeUnavailable, "the platform is unavailable")
		}
		return p.Project(ctx, id)
	})
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects = flaky })
	f.set(t, "example.com.", cname("shop", target), cname("b", target))
	f.add(t, "prj_a", "shop.example.com")
	f.verify(t, "prj_a", "shop.example.com")
	f.add(t, "prj_b", "b.example.com")
	f.verify(t, "prj_b", "b.example.com")

	p.SetPlan("prj_a", petstore.PlanFree)
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteNone {
		t.Fatalf("suspended domain routes: %+v", got)
	}

	down.Store(true)
	for range 2 {
		if err := f.engine.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteNone {
			t.Fatalf("suspended domain routes while its plan cannot be read: %+v", got)
		}
		if got := f.engine.Route("b.example.com"); got.Kind != customdomain.RouteServe {
			t.Fatalf("a Pro project's domain stopped while its plan cannot be read: %+v", got)
		}
	}

	down.Store(false)
	p.SetPlan("prj_a", petstore.PlanPro)
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("domain of an upgraded project does not route: %+v", got)
	}
}

// TestSuspendedPendingDomainStaysSuspendedWhileThePlanCannotBeRead: a
// project downgraded below Pro has a pending domain, which the background
// loop leaves as it is. While the platform cannot say what the project's
// plan is, the background checks and the dashboard go on with the plan
// they last read: the domain's records coming right does not make it
// live, it is not routed, and Get and List still show it suspended.
// Before, a failed lookup counted as "not suspended": the domain was
// verified and served while the platform was down, and the dashboard
// showed it pending or active.
func TestSuspendedPendingDomainStaysSuspendedWhileThePlanCannotBeRead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	p := domaintest.NewProjects(customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true})
	var down atomic.Bool
	flaky := customdomain.ProjectsFunc(func(ctx context.Context, id string) (customdomain.Project, error) {
		if down.Load() {
			return customdomain.Project{}, petstore.Errorf(petstore.CodeUnavailable, "the platform is unavailable")
		}
		return p.Project(ctx, id)
	})
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects = flaky })
	const name = "later.example.com"
	f.add(t, "prj_a", name) // pending: no records yet
	p.SetPlan("prj_a", petstore.PlanFree)
	if _, err := f.engine.RunDue(ctx, f.clock.Advance(2*time.Minute)); err != nil {
		t.Fatal(err)
	}

	down.Store(true)
	f.set(t, "example.com.", cname("later", target))
	for range 3 {
		if _, err := f.engine.RunDue(ctx, f.clock.Advance(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.engine.Route(name); got.Kind != customdomain.RouteNone {
		t.Fatalf("suspended domain routes while its plan cannot be read: %+v", got)
	}
	d, err := f.engine.Get(ctx, "prj_a", name)
	if err != nil || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusPending {
		t.Fatalf("Get while the plan cannot be read: %s resuming as %s (%v), want suspended resuming as pending", d.Status, d.ResumesAs, err)
	}
	list, err := f.engine.List(ctx, "prj_a")
	if err != nil || len(list) != 1 || list[0].Status != customdomain.StatusSuspended {
		t.Fatalf("List while the plan cannot be read: %+v (%v), want one suspended domain", list, err)
	}
}
