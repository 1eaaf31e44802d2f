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

// TestDomainFailedForItsCertificateRecoversAfterTheUpgrade: a domain
// whose records verified fails for lack of a certificate (the
// certificate layer gave up: CERT_PENDING_TOO_LONG). Its project is
// suspended, and meanwhile another process obtains the certificate; the
// certificate layer's report leaves the domain as it is, as it must
// while the project is below Pro. Within a minute of the upgrade the
// domain is active, its records still verifying, with
// domain.certificate.issued then domain.active told, and no click on
// Re-verify. Before, the background loop never looked at a failed
// domain again, so it stayed failed until the customer re-verified.
func TestDomainFailedForItsCertificateRecoversAfterTheUpgrade(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, nil)
	p := domaintest.NewProjects(customdomain.Project{ID: "prj_a", Plan: petstore.PlanPro, Deployed: true})
	ev := &events{}
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects, c.Events, c.CertIssuer = p, ev, certs })
	const name = "shop.example.com"
	failForItsCertificate(t, f, certs, "prj_a", name)

	p.SetPlan("prj_a", petstore.PlanFree)
	f.runTo(t, f.clock.Now().Add(2*time.Hour))
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	if err := f.engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	f.runTo(t, f.clock.Now().Add(2*time.Hour))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusFailed {
		t.Fatalf("suspended: %s resuming as %s (%v), want suspended resuming as failed", d.Status, d.ResumesAs, err)
	}
	ev.take()

	p.SetPlan("prj_a", petstore.PlanPro)
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("a minute after the upgrade: %s %q (%v), want active", d.Status, d.Reason, err)
	}
	if got := f.engine.Route(name); got.Kind != customdomain.RouteServe {
		t.Fatalf("recovered domain does not route: %+v", got)
	}
	if got, want := ev.take(), []string{
		"prj_a domain.certificate.issued " + name + " active",
		"prj_a domain.active " + name + " active",
	}; !slices.Equal(got, want) {
		t.Fatalf("events after the upgrade %q, want %q", got, want)
	}
}

// TestDomainFailedForItsCertificateStaysFailedWhileItsRecordsAreWrong:
// a domain failed for lack of a certificate whose certificate another
// process later obtains does not go active on its own while its records
// no longer verify: it stays failed, unserved.
func TestDomainFailedForItsCertificateStaysFailedWhileItsRecordsAreWrong(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	const name = "shop.example.com"
	failForItsCertificate(t, f, certs, "prj_pro", name)
	f.set(t, "example.com.", cname("shop", "elsewhere.example.org"))
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	// Told by the certificate layer, or found by the hourly look.
	if err := f.engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	if d, err := f.engine.Get(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusFailed {
		t.Fatalf("records wrong, certificate reported: %s (%v), want failed", d.Status, err)
	}
	f.runTo(t, f.clock.Now().Add(3*time.Hour))
	if d, err := f.engine.Get(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusFailed {
		t.Fatalf("records wrong, certificate there: %s (%v), want failed", d.Status, err)
	}
	if got := f.engine.Route(name); got.Kind != customdomain.RouteNone {
		t.Fatalf("failed domain whose records are wrong routes: %+v", got)
	}
}

// TestDomainFailedForItsCertificateBeforeTheLoopLookedAtItRecovers: a
// domain failed for lack of a certificate by an engine that did not yet
// give such a domain a next check (its entry has none) is looked at by
// the first background round of an engine that does: with its records
// verifying and its certificate obtained meanwhile, it goes active.
func TestDomainFailedForItsCertificateBeforeTheLoopLookedAtItRecovers(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	const name = "shop.example.com"
	failForItsCertificate(t, f, certs, "prj_pro", name)
	en, err := f.store.DomainByName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	en.NextCheckAt = time.Time{} // as an engine before this one stored it
	if _, err := f.store.UpdateDomain(ctx, en); err != nil {
		t.Fatal(err)
	}

	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })
	if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if d, err := f.engine.Get(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("after the first background round: %s %q (%v), want active", d.Status, d.Reason, err)
	}
}

// failForItsCertificate adds name to projectID, verifies it, and has the
// certificate layer give up on it (CERT_PENDING_TOO_LONG), so that it
// fails for lack of a certificate alone.
func failForItsCertificate(t *testing.T, f *fixture, certs *issuer, projectID, name string) {
	t.Helper()
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, projectID, name)
	if d := f.verify(t, projectID, name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, want issuing", d.Status)
	}
	certs.set(name, customdomain.CertStatus{State: customdomain.CertFailed, Reason: "no certificate after 30 minutes",
		Findings: []customdomain.Finding{customdomain.CertPendingTooLongFinding(name, 30*time.Minute, "")}})
	f.runTo(t, f.clock.Now().Add(time.Minute))
	if d, err := f.engine.Get(context.Background(), projectID, name); err != nil || d.Status != customdomain.StatusFailed {
		t.Fatalf("after the certificate layer gave up: %s (%v), want failed", d.Status, err)
	}
}
