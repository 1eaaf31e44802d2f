package customdomain_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// countingProjects counts the platform's project lookups.
type countingProjects struct {
	customdomain.Projects
	n atomic.Int64
}

func (c *countingProjects) Project(ctx context.Context, id string) (customdomain.Project, error) {
	c.n.Add(1)
	return c.Projects.Project(ctx, id)
}

// TestRemovalDoesNotAskForEveryProjectsPlan: the platform has many
// projects with live domains. Removing one domain (and the reload it
// makes on another process through the change feed) must not look up the
// plan of every project with a live domain: the routing table reloaded
// for a change keeps the plans the last periodic Refresh read, which is
// when plan changes take effect. Before, each Remove, Verify or
// SetConfig, and each reload through the feed, asked the platform once per
// project with a live domain, so the request and the removal's arrival
// elsewhere grew with the platform.
func TestRemovalDoesNotAskForEveryProjectsPlan(t *testing.T) {
	ctx := context.Background()
	const n = 40
	ps := domaintest.NewProjects()
	for i := range n {
		ps.Set(customdomain.Project{ID: fmt.Sprintf("prj_%d", i), Plan: petstore.PlanPro, Deployed: true})
	}
	counted := &countingProjects{Projects: ps}
	feed := &changefeed.Local{}
	w := domaintest.New(t, domaintest.Options{
		Projects: counted,
		Config:   func(c *customdomain.EngineConfig) { c.Feed = feed },
	})
	for i := range n {
		label := fmt.Sprintf("s%d", i)
		name := label + ".example.com"
		w.Set(t, "example.com.", cname(label, domaintest.Target))
		if _, _, err := w.Engine.Add(ctx, fmt.Sprintf("prj_%d", i), name); err != nil {
			t.Fatal(err)
		}
		if d, err := w.Engine.Verify(ctx, fmt.Sprintf("prj_%d", i), name); err != nil || d.Status != customdomain.StatusActive {
			t.Fatalf("Verify(%s) = %s, %v", name, d.Status, err)
		}
	}
	b := w.Replica(t, nil)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	live := make(chan struct{})
	go feed.Subscribe(subCtx, func(c changefeed.Change) {
		b.Apply(c)
		if c.Kind == changefeed.KindLive {
			close(live)
		}
	})
	<-live
	waitRoute(t, b, "s0.example.com", customdomain.RouteServe)

	counted.n.Store(0)
	if err := w.Engine.Remove(ctx, "prj_0", "s0.example.com"); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, b, "s0.example.com", customdomain.RouteNone)
	if got := counted.n.Load(); got >= n/2 {
		t.Fatalf("removing one domain looked up %d projects' plans on the two processes, with %d projects live; want a few, not one per project", got, n)
	}

	// A plan change still takes effect at the next Refresh.
	ps.SetPlan("prj_1", petstore.PlanFree)
	for _, e := range []*customdomain.Engine{w.Engine, b} {
		if err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.Route("s1.example.com"); r.Kind != customdomain.RouteNone {
			t.Fatalf("a project moved below Pro is still served after a Refresh: %+v", r)
		}
	}
	// Back on Pro, a domain it verifies is served at once, with its
	// others, by the engine that verified it.
	ps.SetPlan("prj_1", petstore.PlanPro)
	w.Set(t, "example.com.", cname("t1", domaintest.Target))
	if _, _, err := w.Engine.Add(ctx, "prj_1", "t1.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_1", "t1.example.com"); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify after the upgrade = %s, %v", d.Status, err)
	}
	for _, host := range []string{"t1.example.com", "s1.example.com"} {
		if r := w.Engine.Route(host); r.Kind != customdomain.RouteServe {
			t.Fatalf("%s right after its project upgraded and verified a domain: %+v, want served", host, r)
		}
	}
}
