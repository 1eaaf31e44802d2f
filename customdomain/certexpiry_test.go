package customdomain_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// TestRenewalFailingIsToldBeforeTheCertificateExpires: an active domain's
// certificate that renewing has not replaced 7 days before it expires is
// told once, as domain.certificate.failed, and the dashboard's diagnosis
// says CERT_EXPIRING, while the domain is still served; once it is
// renewed, domain.certificate.issued says so and the finding is gone.
// Before, nothing was said until browsers refused the expired
// certificate (CERT_EXPIRED).
func TestRenewalFailingIsToldBeforeTheCertificateExpires(t *testing.T) {
	ctx := context.Background()
	const name = "shop.example.com"
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	ev := &events{}
	w := driftWorld(t, certs, ev)
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", domaintest.Target)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	issued := w.Clock.Now()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: issued, NotAfter: issued.Add(90 * day)})
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	ev.take()

	// Renewal is due from 30 days before the end; it keeps failing.
	runUntil(t, w, issued.Add(82*day))
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("8 days before expiry: events %v, want none yet", got)
	}
	runUntil(t, w, issued.Add(83*day+time.Hour))
	if got := ev.take(); !slices.Equal(got, []string{"prj_pro domain.certificate.failed " + name + " active"}) {
		t.Fatalf("7 days before expiry: events %v, want domain.certificate.failed once", got)
	}
	d := get(t, w, "prj_pro", name)
	if d.Status != customdomain.StatusActive || d.Diagnosis.OK || codes(d.Diagnosis.Findings) != customdomain.FindingCertExpiring {
		t.Fatalf("expiring certificate: %s, ok %v, findings %q; want active, not OK, CERT_EXPIRING", d.Status, d.Diagnosis.OK, codes(d.Diagnosis.Findings))
	}
	runUntil(t, w, issued.Add(85*day))
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("told again: %v", got)
	}

	// Renewed at last.
	renewed := w.Clock.Now()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: renewed, NotAfter: renewed.Add(90 * day)})
	if err := w.Engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	if got := ev.take(); !slices.Equal(got, []string{"prj_pro domain.certificate.issued " + name + " active"}) {
		t.Fatalf("renewed: events %v, want domain.certificate.issued", got)
	}
	if d := get(t, w, "prj_pro", name); !d.Diagnosis.OK || len(d.Diagnosis.Findings) != 0 {
		t.Fatalf("renewed: ok %v, findings %q; want OK", d.Diagnosis.OK, codes(d.Diagnosis.Findings))
	}
}

// TestReverifyRenewsAnExpiringCertificate: CERT_EXPIRING's fix tells the
// customer to click Re-verify, and Re-verify of the live domain asks the
// certificate layer for a renewal now, as it does for an expired one.
// Before, the finding said nothing the customer could do, and Re-verify
// of an expiring certificate asked nothing.
func TestReverifyRenewsAnExpiringCertificate(t *testing.T) {
	ctx := context.Background()
	const name = "shop.example.com"
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	w := driftWorld(t, certs, &events{})
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", domaintest.Target)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	issued := w.Clock.Now()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: issued, NotAfter: issued.Add(90 * day)})
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	requests := func() int { certs.mu.Lock(); defer certs.mu.Unlock(); return len(certs.requests) }
	before := requests()
	runUntil(t, w, issued.Add(84*day))
	d := get(t, w, "prj_pro", name)
	i := slices.IndexFunc(d.Diagnosis.Findings, func(f customdomain.Finding) bool { return f.Code == customdomain.FindingCertExpiring })
	if i < 0 || !strings.Contains(d.Diagnosis.Findings[i].Fix, "Re-verify") {
		t.Fatalf("findings %+v: want CERT_EXPIRING whose fix says to click Re-verify", d.Diagnosis.Findings)
	}
	if _, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if got := requests() - before; got != 1 {
		t.Fatalf("Re-verify of an active domain whose certificate expires in 6 days asked for %d certificates, want a renewal", got)
	}
}

// TestExpiryIsToldWithDriftChecksOff: with drift checks off
// (RecheckActive negative) a live domain's record is never checked again,
// but its certificate still is, so a renewal that keeps failing is told
// (domain.certificate.failed, CERT_EXPIRING) before browsers refuse it,
// and the record pointed elsewhere is not noticed, as configured. Before,
// nothing looked at the certificate of a live domain without drift
// checks: neither its coming expiry nor its expiry was ever told.
func TestExpiryIsToldWithDriftChecksOff(t *testing.T) {
	ctx := context.Background()
	const name = "shop.example.com"
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	ev := &events{}
	w := domaintest.New(t, domaintest.Options{
		Projects: projects, CertIssuer: certs,
		Config: func(c *customdomain.EngineConfig) {
			c.Events = ev
			c.EdgeIPs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			c.RecheckActive = -1
		},
	})
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", domaintest.Target)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	issued := w.Clock.Now()
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued, NotBefore: issued, NotAfter: issued.Add(90 * day)})
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	ev.take()
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", "elsewhere.example.org")}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, w, issued.Add(83*day+2*time.Hour))
	if got := ev.take(); !slices.Equal(got, []string{"prj_pro domain.certificate.failed " + name + " active"}) {
		t.Fatalf("7 days before expiry, drift checks off: events %v, want domain.certificate.failed once", got)
	}
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusActive || codes(d.Diagnosis.Findings) != customdomain.FindingCertExpiring {
		t.Fatalf("%s, findings %q; want active (drift not checked), CERT_EXPIRING", d.Status, codes(d.Diagnosis.Findings))
	}
}
