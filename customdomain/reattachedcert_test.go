package customdomain_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// TestLateCertificateEventLeavesAReattachedNamePending: a certificate
// event for a name that was removed and added again (the old domain's
// order finishing late, say) belongs to the old domain. The new domain,
// pending, never verified and with no DCV delegation, is not marked
// certified by it: its certificate stays none, its handshakes are not
// answered, and its project is not told domain.certificate.issued.
// Before, it showed the old holder's certificate as its own, the
// certificate layer answered handshakes for a name whose new holder had
// proved nothing, and the project got domain.certificate.issued.
func TestLateCertificateEventLeavesAReattachedNamePending(t *testing.T) {
	ctx := context.Background()
	const name = "shop.example.com"
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	ev := &events{}
	w := driftWorld(t, certs, ev)
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", domaintest.Target)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, %v; want issuing", d.Status, err)
	}
	if err := w.Engine.Remove(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	// Another project adds the name; the CNAME left behind does not prove
	// it is theirs (no ownership TXT record), so it stays pending.
	if _, _, err := w.Engine.Add(ctx, "prj_business", name); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_business", name); err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("Verify of the new domain = %s, %v; want pending", d.Status, err)
	}
	ev.take()

	// The old domain's order completes now, and the certificate layer
	// says so.
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssuing})
	if err := w.Engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	certs.set(name, customdomain.CertStatus{State: customdomain.CertIssued})
	if err := w.Engine.CertificateChanged(ctx, name); err != nil {
		t.Fatal(err)
	}
	runUntil(t, w, w.Clock.Now().Add(2*time.Minute))

	d := get(t, w, "prj_business", name)
	if d.Status != customdomain.StatusPending || d.Certificate.State != customdomain.CertNone {
		t.Errorf("new domain: %s with certificate %s; want pending with none", d.Status, d.Certificate.State)
	}
	if w.Engine.Admits(name) {
		t.Errorf("handshakes for %s answered for a domain that has not verified", name)
	}
	if got := ev.take(); slices.Contains(got, "prj_business domain.certificate.issued "+name+" pending") {
		t.Errorf("events %v: the new domain was told the old one's certificate", got)
	}
}
