package customdomain_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// TestWildcardDelegationDeletedIsReportedAsSuch: an active wildcard's
// routing CNAME is still right, but the customer deleted its DCV
// delegation, without which its certificate cannot be renewed. The drift
// check makes it misconfigured, and its reason says what is wrong (the
// delegation), not that the record "no longer points at the platform: it
// points to" the platform's own target; so does the release's reason
// once the grace period is over.
func TestWildcardDelegationDeletedIsReportedAsSuch(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	w := domaintest.New(t, domaintest.Options{
		Projects: projects, CertIssuer: certs,
		Config: func(c *customdomain.EngineConfig) { c.DCVZone = "dcv.petstore.example" },
	})
	const name = "*.shop.example.com"
	d, _, err := w.Engine.Add(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	var dcvTarget string
	for _, r := range d.Records {
		if strings.HasPrefix(r.Name, "_acme-challenge") {
			dcvTarget = r.Value
		}
	}
	if dcvTarget == "" {
		t.Fatalf("no delegation among the records: %+v", d.Records)
	}
	w.Set(t, "example.com.", cname("*.shop", domaintest.Target), cname("_acme-challenge.shop", dcvTarget))
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}

	if _, err := w.Zone.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "_acme-challenge.shop"}}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, w, w.Clock.Now().Add(time.Hour))
	d = get(t, w, "prj_pro", name)
	if d.Status != customdomain.StatusMisconfigured {
		t.Fatalf("after the delegation was deleted: %s, want misconfigured", d.Status)
	}
	if strings.Contains(d.Reason, "points to "+domaintest.Target) || !strings.Contains(d.Reason, "_acme-challenge") {
		t.Fatalf("reason %q; want it to name the missing delegation, not the target the record rightly points to", d.Reason)
	}

	// Not back within the grace period: released, saying why.
	runUntil(t, w, w.Clock.Now().Add(customdomain.DefaultDriftGrace))
	d = get(t, w, "prj_pro", name)
	if d.Status != customdomain.StatusReleased || strings.Contains(d.Reason, "did not point at the platform") || !strings.Contains(d.Reason, "_acme-challenge") {
		t.Fatalf("after the grace period: %s, %q; want released, naming the missing delegation", d.Status, d.Reason)
	}
}
