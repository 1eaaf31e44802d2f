package customdomain_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// A misconfigured domain says it is "released unless the record comes
// back" after the grace period, and the name is then free for its owner.
// A project moved below Pro meanwhile does not hold the name past that:
// its misconfigured domain goes on being checked and is released on time.
func TestSuspendedMisconfiguredDomainIsReleasedAfterGrace(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	const name = "shop.example.com"
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", name)
	f.verify(t, "prj_a", name)
	if _, err := f.zone.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "shop", Type: "CNAME"}}); err != nil {
		t.Fatal(err)
	}
	f.set(t, "example.com.", addr("shop", "192.0.2.80"))
	entry := func() customdomain.Entry { // the zero Entry once nobody holds the name
		t.Helper()
		en, err := f.store.DomainByName(ctx, name)
		if err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatal(err)
		}
		return en
	}
	run := func(until time.Time) {
		t.Helper()
		for en := entry(); !en.NextCheckAt.IsZero() && !en.NextCheckAt.After(until); en = entry() {
			f.clock.Set(en.NextCheckAt)
			if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		f.clock.Set(until)
	}
	run(f.clock.Now().Add(2 * time.Hour))
	drifted := entry()
	if drifted.Status != customdomain.StatusMisconfigured || !strings.Contains(drifted.Reason, "then released unless the record comes back") {
		t.Fatalf("after the record moved: %s %q, want misconfigured", drifted.Status, drifted.Reason)
	}
	p.SetPlan("prj_a", petstore.PlanFree)
	run(drifted.DriftedAt.Add(72*time.Hour + 2*time.Hour))
	if en := entry(); en.Name != "" {
		t.Fatalf("suspended, 74 hours after the record moved away: %s (next check %v), want released as its reason said", en.Status, en.NextCheckAt)
	}
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusReleased {
		t.Fatalf("the project's view: %s (resumes as %s), %v; want released, not suspended: an upgrade would not serve it", d.Status, d.ResumesAs, err)
	}
	if f.engine.Admits(name) {
		t.Fatal("a released name's handshakes are still admitted")
	}
	if _, created, err := f.engine.Add(ctx, "prj_b", name); err != nil || !created {
		t.Fatalf("the released name for another project: %v, %v; want it free", created, err)
	}
}
