package customdomain_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// runTo runs the fixture's background loop at each due time up to until,
// as the clock passes, and leaves the clock at until.
func (f *fixture) runTo(t *testing.T, until time.Time) {
	t.Helper()
	ctx := context.Background()
	for {
		due, err := f.store.DueDomains(ctx, until, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) == 0 {
			f.clock.Set(until)
			return
		}
		if due[0].NextCheckAt.After(f.clock.Now()) {
			f.clock.Set(due[0].NextCheckAt)
		}
		if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSuspensionDoesNotUseUpTheVerificationWindow: a pending domain has
// 48 hours of checks on Pro for its DNS to propagate; time its project
// spends below Pro, when it is not checked, does not count. A domain
// pending 10 hours, suspended 40, then back on Pro is still pending 37
// hours later, and fails only once it has been pending 48 hours on Pro.
// Before, it failed at its first check after the upgrade, 48 hours
// after it was added, without one more check of its records.
func TestSuspensionDoesNotUseUpTheVerificationWindow(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	const name = "later.example.com"
	f.add(t, "prj_a", name)
	f.runTo(t, start.Add(10*time.Hour))
	p.SetPlan("prj_a", petstore.PlanFree)
	f.runTo(t, start.Add(50*time.Hour))
	if d, err := f.engine.Get(ctx, "prj_a", name); err != nil || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusPending {
		t.Fatalf("while suspended: %s resuming as %s (%v), want suspended resuming as pending", d.Status, d.ResumesAs, err)
	}
	p.SetPlan("prj_a", petstore.PlanPro)
	f.runTo(t, start.Add(87*time.Hour))
	d, err := f.engine.Get(ctx, "prj_a", name)
	if err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("37 hours after the upgrade (47 on Pro): %s %q (%v), want pending", d.Status, d.Reason, err)
	}
	f.runTo(t, start.Add(89*time.Hour))
	d, err = f.engine.Get(ctx, "prj_a", name)
	if err != nil || d.Status != customdomain.StatusFailed {
		t.Fatalf("49 hours on Pro: %s (%v), want failed", d.Status, err)
	}
	if at := d.History[len(d.History)-1].At; at.Before(start.Add(88 * time.Hour)) {
		t.Fatalf("failed %s after it was added, %s of it suspended; want 48 hours on Pro", at.Sub(start), 40*time.Hour)
	}
}
