package customdomain_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// outageFixture is newFixture with project prj_a on Pro, whose plan
// lookup fails (unavailable, not not_found) while down is set, and
// events told to ev. restart returns another process's engine on the
// same store, one that has read no plan yet, as after a restart.
func outageFixture(t *testing.T, certs customdomain.CertIssuer) (f *fixture, down *atomic.Bool, ev *events, restart func() *customdomain.Engine) {
	t.Helper()
	f = newFixture(t, nil)
	p := domaintest.NewProjects(customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true})
	down, ev = &atomic.Bool{}, &events{}
	flaky := customdomain.ProjectsFunc(func(ctx context.Context, id string) (customdomain.Project, error) {
		if down.Load() {
			return customdomain.Project{}, petstore.Errorf(petstore.CodeUnavailable, "the platform is unavailable")
		}
		return p.Project(ctx, id)
	})
	edit := func(c *customdomain.EngineConfig) { c.Projects, c.Events, c.CertIssuer = flaky, ev, certs }
	f.engine = f.replica(t, edit)
	return f, down, ev, func() *customdomain.Engine { return f.replica(t, edit) }
}

// TestPendingDomainWaitsAfterARestartWhileThePlanCannotBeRead: an engine
// started while the platform cannot say a project's plan has never read
// it. Its background checks do not take the plan for Pro: a pending
// domain whose records are right stays pending, unserved and with no
// events, while the lookup fails (the project may be below Pro), and
// goes active at its first check once the lookup says Pro. The project's
// live domain is still checked: its record moving away makes it
// misconfigured. Before, the pending domain was verified and served
// during the outage, however the platform would have answered.
func TestPendingDomainWaitsAfterARestartWhileThePlanCannotBeRead(t *testing.T) {
	ctx := context.Background()
	f, down, ev, restart := outageFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", "shop.example.com")
	f.verify(t, "prj_a", "shop.example.com")
	f.add(t, "prj_a", "later.example.com") // pending: no records yet
	ev.take()

	down.Store(true)
	f.engine = restart()
	f.set(t, "example.com.", cname("later", target))
	f.set(t, "example.com.", cname("shop", "elsewhere.example.org"))
	f.runTo(t, f.clock.Now().Add(2*time.Hour))

	d, err := f.engine.Get(ctx, "prj_a", "later.example.com")
	if err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("pending domain while its unread plan cannot be read: %s (%v), want pending", d.Status, err)
	}
	if got := f.engine.Route("later.example.com"); got.Kind != customdomain.RouteNone {
		t.Fatalf("pending domain routes while its unread plan cannot be read: %+v", got)
	}
	if d, err := f.engine.Get(ctx, "prj_a", "shop.example.com"); err != nil || d.Status != customdomain.StatusMisconfigured {
		t.Fatalf("live domain whose record moved away: %s (%v), want misconfigured", d.Status, err)
	}
	if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("misconfigured domain stopped while its plan cannot be read: %+v", got)
	}
	if got, want := ev.take(), []string{"prj_a domain.misconfigured shop.example.com misconfigured"}; !slices.Equal(got, want) {
		t.Fatalf("events while the plan cannot be read %q, want %q", got, want)
	}

	down.Store(false)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", "later.example.com"); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the lookup answered Pro: %s (%v), want active", d.Status, err)
	}
	if got := f.engine.Route("later.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("domain active once the plan is read does not route: %+v", got)
	}
}

// TestIssuingDomainWaitsAfterARestartWhileThePlanCannotBeRead: a domain
// waiting for its certificate (issuing) does not go active through the
// background checks of an engine that has not read its project's plan
// while the lookup fails, even once the certificate is issued; it does
// at the first check once the lookup says Pro.
func TestIssuingDomainWaitsAfterARestartWhileThePlanCannotBeRead(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f, down, _, restart := outageFixture(t, certs)
	const name = "shop.example.com"
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", name)
	if d := f.verify(t, "prj_a", name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, want issuing", d.Status)
	}

	down.Store(true)
	f.engine = restart()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	f.runTo(t, f.clock.Now().Add(10*time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("issuing domain while its unread plan cannot be read: %s (%v), want issuing", d.Status, err)
	}

	down.Store(false)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the lookup answered Pro: %s (%v), want active", d.Status, err)
	}
}

// TestUnreadPlanDoesNotUseUpTheVerificationWindow: time a pending domain
// waits because its project's plan cannot be read, and this engine never
// read it, does not count against its 48 hours, as time suspended does
// not: after 50 hours of outage from the engine's start it still has 48
// hours of checks once the lookup answers Pro.
func TestUnreadPlanDoesNotUseUpTheVerificationWindow(t *testing.T) {
	ctx := context.Background()
	f, down, _, restart := outageFixture(t, nil)
	const name = "later.example.com"
	f.add(t, "prj_a", name) // pending: no records
	down.Store(true)
	f.engine = restart()
	f.runTo(t, start.Add(50*time.Hour))
	down.Store(false)
	f.runTo(t, start.Add(97*time.Hour))
	d, err := f.engine.Get(ctx, "prj_a", name)
	if err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("47 hours after the lookup answered: %s %q (%v), want pending", d.Status, d.Reason, err)
	}
	f.runTo(t, start.Add(99*time.Hour))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusFailed {
		t.Fatalf("49 hours after the lookup answered: %s (%v), want failed", d.Status, err)
	}
}

// TestIssuingDomainWaitsWhenItsCertificateIsReportedWhileThePlanCannotBeRead
// is TestIssuingDomainWaitsAfterARestartWhileThePlanCannotBeRead through
// the certificate layer's report (CertificateChanged): an engine that
// never read the project's plan, whose lookup fails, leaves an issuing
// domain whose certificate is obtained issuing, unserved and with no
// events, and at the first check once the lookup says Pro the domain goes
// active, domain.certificate.issued told then, before domain.active.
// Before, the report made it active on the guess that the project was on
// Pro.
func TestIssuingDomainWaitsWhenItsCertificateIsReportedWhileThePlanCannotBeRead(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f, down, ev, restart := outageFixture(t, certs)
	const name = "shop.example.com"
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", name)
	if d := f.verify(t, "prj_a", name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, want issuing", d.Status)
	}
	ev.take()

	down.Store(true)
	f.engine = restart()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	if err := f.engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("after the report while the unread plan cannot be read: %s (%v), want issuing", d.Status, err)
	}
	if got := f.engine.Route(name); got.Kind != customdomain.RouteNone {
		t.Fatalf("issuing domain routes after the report while the unread plan cannot be read: %+v", got)
	}
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("events of the report while the unread plan cannot be read %q, want none", got)
	}

	down.Store(false)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the lookup answered Pro: %s (%v), want active", d.Status, err)
	}
	if got, want := ev.take(), []string{
		"prj_a domain.certificate.issued " + name + " active",
		"prj_a domain.active " + name + " active",
	}; !slices.Equal(got, want) {
		t.Fatalf("events once the lookup answered Pro %q, want %q", got, want)
	}
}

// TestDomainHeldForAnUnreadPlanSaysWhy: while an engine that never read
// a project's plan cannot read it, Get and List show its pending and
// issuing domains with PLAN_UNKNOWN, and the next action is to wait (a
// Verify would answer that the platform cannot say): a user sees why
// nothing moves. Its live domain does not show it, and neither does any
// domain once the lookup answers. Before, the views showed a plain
// pending or issuing domain with nothing saying why it did not move on.
func TestDomainHeldForAnUnreadPlanSaysWhy(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f, down, _, restart := outageFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("live", target))
	f.add(t, "prj_a", "live.example.com")
	certs.set("live.example.com", customdomain.CertStatus{State: customdomain.CertIssued})
	if d := f.verify(t, "prj_a", "live.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify live.example.com = %s, want active", d.Status)
	}
	f.add(t, "prj_a", "shop.example.com")
	if d := f.verify(t, "prj_a", "shop.example.com"); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify shop.example.com = %s, want issuing", d.Status)
	}
	f.add(t, "prj_a", "later.example.com") // pending: no records

	planUnknown := func(d customdomain.Domain) bool {
		return slices.ContainsFunc(d.Diagnosis.Findings, func(f customdomain.Finding) bool {
			return f.Code == customdomain.FindingPlanUnknown
		})
	}
	down.Store(true)
	f.engine = restart()
	f.runTo(t, f.clock.Now().Add(5*time.Minute))
	held := map[string]customdomain.Status{"shop.example.com": customdomain.StatusIssuing, "later.example.com": customdomain.StatusPending}
	for name, status := range held {
		d, err := f.engine.Get(ctx, "prj_a", name)
		if err != nil || d.Status != status {
			t.Fatalf("%s while its unread plan cannot be read: %s (%v), want %s", name, d.Status, err, status)
		}
		if !planUnknown(d) || d.Diagnosis.NextAction != customdomain.ActionWait || d.Diagnosis.OK {
			t.Fatalf("%s held for its unread plan: diagnosis %+v, want %s, next action wait, not ok", name, d.Diagnosis, customdomain.FindingPlanUnknown)
		}
	}
	list, err := f.engine.List(ctx, "prj_a")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list {
		if _, ok := held[d.Name]; ok != planUnknown(d) {
			t.Fatalf("List: %s (%s) shows %s: %v, want %v", d.Name, d.Status, customdomain.FindingPlanUnknown, planUnknown(d), ok)
		}
	}

	down.Store(false)
	for _, name := range []string{"shop.example.com", "later.example.com", "live.example.com"} {
		if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || planUnknown(d) {
			t.Fatalf("%s once the lookup answers: %+v (%v), want no %s", name, d.Diagnosis.Findings, err, customdomain.FindingPlanUnknown)
		}
	}
}
