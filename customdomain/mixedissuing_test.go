package customdomain_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
)

// TestIssuingDomainOnAReplicaWithoutACertIssuer: a domain verified by a
// replica with a CertIssuer waits for its certificate (issuing) when a
// replica without one runs its background round: another replica of a
// deployment of mixed configuration, or the same process restarted
// without its certificate layer. That replica does what Step says of an
// issuing domain without a certificate layer, serving it over plain HTTP
// (active), as Verify on it does; the certificate, once issued, is served
// too. Before, its background round called the missing CertIssuer and
// the process crashed, at every start while a domain was issuing.
func TestIssuingDomainOnAReplicaWithoutACertIssuer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	withIssuer := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })
	f.set(t, "example.com.", cname("shop", target))
	if _, _, err := withIssuer.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := withIssuer.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, %v; want issuing", d.Status, err)
	}

	noIssuer := f.engine // the fixture's engine has no CertIssuer
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the replica without a CertIssuer panicked on an issuing domain: %v", p)
			}
		}()
		if _, err := noIssuer.RunDue(ctx, f.clock.Advance(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}()
	d, err := noIssuer.Get(ctx, "prj_pro", "shop.example.com")
	if err != nil || d.Status != customdomain.StatusActive || noIssuer.Route("shop.example.com").Kind != customdomain.RouteServe {
		t.Fatalf("after the replica without a CertIssuer ran: %s, %v; want active, served over HTTP", d.Status, err)
	}

	certs.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertIssued})
	if err := withIssuer.CertificateChanged(ctx, "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := withIssuer.Get(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive || d.Certificate.State != customdomain.CertIssued || !withIssuer.Admits("shop.example.com") {
		t.Fatalf("once the certificate is issued: %s with certificate %s, %v; want active with it", d.Status, d.Certificate.State, err)
	}
}
