package customdomain_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// planFixture is newFixture with projects prj_a and prj_b, both Pro
// and deployed, whose plans the test changes.
func planFixture(t *testing.T) (*fixture, *domaintest.Projects) {
	t.Helper()
	f := newFixture(t, nil)
	p := domaintest.NewProjects(
		customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true},
		customdomain.Project{ID: "prj_b", Plan: petstore.PlanPro, Deployed: true})
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects = p })
	return f, p
}

func TestDowngradeSuspendsAndUpgradeResumes(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	f.set(t, "example.com.", cname("shop", target), cname("www", target), cname("b", target))
	f.add(t, "prj_a", "shop.example.com")
	f.verify(t, "prj_a", "shop.example.com")
	f.add(t, "prj_a", "www.example.com")
	f.add(t, "prj_a", "later.example.com") // pending, no records yet
	if _, err := f.engine.SetConfig(ctx, "prj_a", customdomain.Config{Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	f.verify(t, "prj_a", "www.example.com")
	f.add(t, "prj_b", "b.example.com")
	f.verify(t, "prj_b", "b.example.com")

	p.SetPlan("prj_a", petstore.PlanFree)
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"shop.example.com", "www.example.com", "later.example.com"} {
		if got := f.engine.Route(host); got.Kind != customdomain.RouteNone {
			t.Fatalf("suspended %s routes: %+v", host, got)
		}
	}
	if got := f.engine.Route("b.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("another project's domain stopped: %+v", got)
	}

	list, err := f.engine.List(ctx, "prj_a")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]customdomain.Status{"shop.example.com": customdomain.StatusActive, "www.example.com": customdomain.StatusActive, "later.example.com": customdomain.StatusPending}
	for _, d := range list {
		if d.Status != customdomain.StatusSuspended || d.ResumesAs != want[d.Name] || d.Reason == "" ||
			d.Diagnosis.NextAction != customdomain.ActionUpgradePlan || d.Diagnosis.OK {
			t.Fatalf("%s: status %s resumesAs %s reason %q next %s ok %v", d.Name, d.Status, d.ResumesAs, d.Reason, d.Diagnosis.NextAction, d.Diagnosis.OK)
		}
	}
	if d, err := f.engine.Get(ctx, "prj_a", "shop.example.com"); err != nil || d.Status != customdomain.StatusSuspended {
		t.Fatalf("Get = %s, %v", d.Status, err)
	}

	// Verify, config changes, DNS configuration and adding are refused.
	_, err = f.engine.Verify(ctx, "prj_a", "later.example.com")
	wantCode(t, err, petstore.CodePlanRequired)
	_, err = f.engine.SetConfig(ctx, "prj_a", customdomain.Config{Primary: "shop.example.com"})
	wantCode(t, err, petstore.CodePlanRequired)
	_, err = f.engine.ConfigureDNS(ctx, "prj_a", "shop.example.com")
	wantCode(t, err, petstore.CodePlanRequired)
	_, _, err = f.engine.Add(ctx, "prj_a", "new.example.com")
	wantCode(t, err, petstore.CodePlanRequired)
	_, err = f.engine.Verify(ctx, "prj_a", "b.example.com") // not its domain: 404 first
	wantCode(t, err, petstore.CodeNotFound)

	// The pending domain does not go live in the background, even with
	// its records right.
	f.set(t, "example.com.", cname("shop", target), cname("www", target), cname("b", target), cname("later", target))
	for range 3 {
		if _, err := f.engine.RunDue(ctx, f.clock.Advance(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := f.engine.Get(ctx, "prj_a", "later.example.com"); d.ResumesAs != customdomain.StatusPending {
		t.Fatalf("pending domain of a suspended project moved on: %+v", d)
	}

	// Upgrade: served again with no new verification, redirects included;
	// the pending one resumes its checks.
	p.SetPlan("prj_a", petstore.PlanBusiness)
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("after upgrade: %+v", got)
	}
	if got := f.engine.Route("www.example.com"); got.Kind != customdomain.RouteRedirect || got.RedirectTo != "shop.example.com" {
		t.Fatalf("redirect after upgrade: %+v", got)
	}
	d, err := f.engine.Get(ctx, "prj_a", "shop.example.com")
	if err != nil || d.Status != customdomain.StatusActive || d.ResumesAs != "" || d.Attempts != 1 {
		t.Fatalf("after upgrade: %s resumesAs %q attempts %d (%v)", d.Status, d.ResumesAs, d.Attempts, err)
	}
	if _, err := f.engine.RunDue(ctx, f.clock.Advance(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.engine.Get(ctx, "prj_a", "later.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("pending domain after upgrade: %s", d.Status)
	}

	// A suspended domain can still be removed.
	p.SetPlan("prj_a", petstore.PlanFree)
	if err := f.engine.Remove(ctx, "prj_a", "www.example.com"); err != nil {
		t.Fatal(err)
	}
}

// A suspended project's domain answers nothing (the edge's 404), even
// below another project's wildcard: the name is not the wildcard's.
func TestSuspendedDomainIsNotServedByAWildcard(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	f.set(t, "example.com.", cname("*.shop", target))
	f.add(t, "prj_a", "*.shop.example.com")
	if d := f.verify(t, "prj_a", "*.shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("wildcard: %s %+v", d.Status, d.Diagnosis.Findings)
	}
	// What the wildcard answers for b.shop, and prj_b's proof that it
	// controls the zone (it needs one, being below prj_a's wildcard).
	f.set(t, "example.com.", cname("b.shop", target))
	rec, _ := ownershipRecord(f.add(t, "prj_b", "b.shop.example.com"))
	f.set(t, "example.com.", txt("_petstore-challenge.b.shop", rec.Value))
	if d := f.verify(t, "prj_b", "b.shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("b.shop: %s %+v", d.Status, d.Diagnosis.Findings)
	}

	p.SetPlan("prj_b", petstore.PlanFree)
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := f.engine.Route("b.shop.example.com"); r.Kind != customdomain.RouteNone {
		t.Fatalf("suspended b.shop.example.com routes %+v, want nothing", r)
	}
	if r := f.engine.Route("c.shop.example.com"); r.Kind != customdomain.RouteServe || r.ProjectID != "prj_a" {
		t.Fatalf("c.shop.example.com, below the wildcard, routes %+v", r)
	}
}

// TestSuspendedIssuingDomainWaitsForTheUpgrade: a suspended project's
// domain waiting for its certificate (issuing) stays so, with no events,
// when the certificate is issued meanwhile, and goes active at its first
// check after the upgrade. Before, the background loop's look at the
// certificate after leaving the domain as it was made it active.
func TestSuspendedIssuingDomainWaitsForTheUpgrade(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, nil)
	p := domaintest.NewProjects(customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true})
	ev := &events{}
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects, c.Events, c.CertIssuer = p, ev, certs })
	const name = "shop.example.com"
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", name)
	if d := f.verify(t, "prj_a", name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, want issuing", d.Status)
	}
	ev.take()

	p.SetPlan("prj_a", petstore.PlanFree)
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	f.runTo(t, f.clock.Now().Add(10*time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusIssuing {
		t.Fatalf("while suspended: %s resuming as %s (%v), want suspended resuming as issuing", d.Status, d.ResumesAs, err)
	}
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("events while suspended %q, want none", got)
	}

	p.SetPlan("prj_a", petstore.PlanPro)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the upgrade: %s (%v), want active", d.Status, err)
	}
}

// TestSuspendedIssuingDomainWaitsWhenItsCertificateIsReported is
// TestSuspendedIssuingDomainWaitsForTheUpgrade through the certificate
// layer's report (CertificateChanged) rather than the background loop: a
// suspended project's issuing domain whose certificate is obtained stays
// issuing, with no events, and at its first check after the upgrade goes
// active, domain.certificate.issued told then, before domain.active. The
// renewal of the project's live domain's certificate is still told, as
// on Pro. Before, the report made the issuing domain active and told
// both events while the project was below Pro.
func TestSuspendedIssuingDomainWaitsWhenItsCertificateIsReported(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, nil)
	p := domaintest.NewProjects(customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true})
	ev := &events{}
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects, c.Events, c.CertIssuer = p, ev, certs })
	const name, live = "shop.example.com", "live.example.com"
	day := 24 * time.Hour
	f.set(t, "example.com.", cname("shop", target))
	f.set(t, "example.com.", cname("live", target))
	f.add(t, "prj_a", live)
	now := f.clock.Now()
	certs.set(live, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: now.Add(-89 * day), NotAfter: now.Add(day)})
	if d := f.verify(t, "prj_a", live); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(%s) = %s, want active", live, d.Status)
	}
	f.add(t, "prj_a", name)
	if d := f.verify(t, "prj_a", name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify(%s) = %s, want issuing", name, d.Status)
	}
	if got := ev.take(); !slices.Contains(got, "prj_a domain.certificate.failed "+live+" active") {
		t.Fatalf("events before the downgrade %q, want the live domain's expiring certificate told", got)
	}

	p.SetPlan("prj_a", petstore.PlanFree)
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	if err := f.engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	d, err := f.engine.Get(ctx, "prj_a", name)
	if err != nil || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusIssuing {
		t.Fatalf("after the report while suspended: %s resuming as %s (%v), want suspended resuming as issuing", d.Status, d.ResumesAs, err)
	}
	if d.Certificate.State != customdomain.CertIssued {
		t.Fatalf("certificate shown after the report: %q, want issued", d.Certificate.State)
	}
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("events of the report while suspended %q, want none", got)
	}

	// The live domain's certificate, found expiring before the
	// downgrade, is renewed: that is told, suspended or not.
	certs.set(live, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: now, NotAfter: now.Add(90 * day)})
	if err := f.engine.CertificateChanged(ctx, live); err != nil {
		t.Fatal(err)
	}
	if got, want := ev.take(), []string{"prj_a domain.certificate.issued " + live + " suspended"}; !slices.Equal(got, want) {
		t.Fatalf("renewal of the live domain while suspended: events %q, want %q", got, want)
	}

	p.SetPlan("prj_a", petstore.PlanPro)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the upgrade: %s (%v), want active", d.Status, err)
	}
	if got, want := ev.take(), []string{
		"prj_a domain.certificate.issued " + name + " active",
		"prj_a domain.active " + name + " active",
	}; !slices.Equal(got, want) {
		t.Fatalf("events after the upgrade %q, want %q", got, want)
	}
}
