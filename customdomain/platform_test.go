package customdomain_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// The CNAME target's parent is the platform's own zone even when the
// operator lists no PlatformDomains: a wildcard there (*.petstore.example
// for the target edge.petstore.example) would serve the edge's own name and
// every other name the platform gives out below it, and verifies at once
// where the platform points its own wildcard at the edge. Names above the
// parent are left alone: the parent of a target at a registered domain is
// a public suffix, which no one owns.
func TestNamesBesideTheTargetAreThePlatforms(t *testing.T) {
	ctx := context.Background()
	w := domaintest.New(t, domaintest.Options{
		Zones: []string{"example.com.", "petstore.example."}, Projects: projects,
	})
	// The platform's own wildcard, serving its projects' default names.
	w.Set(t, "petstore.example.", libdns.CNAME{Name: "*", TTL: time.Hour, Target: target + "."})
	for _, name := range []string{"*.petstore.example", "petstore.example", "other.petstore.example", "*.x.petstore.example", target} {
		_, _, err := w.Engine.Add(ctx, "prj_pro", name)
		wantCode(t, err, petstore.CodeInvalidRequest)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatalf("a customer's name: %v", err)
	}
	// A target at a registered domain: its parent is a public suffix, and
	// other names under it are the customers'.
	apex := w.Replica(t, func(c *customdomain.EngineConfig) { c.CNAMETarget = "petstore.example" })
	if _, _, err := apex.Add(ctx, "prj_business", "shop.example.org"); err != nil {
		t.Fatalf("with the target at an apex, a customer's name: %v", err)
	}
	_, _, err := apex.Add(ctx, "prj_business", "x.petstore.example")
	wantCode(t, err, petstore.CodeInvalidRequest)
}

// Without EdgeIPs, until the target's addresses were looked up once, a
// failing lookup of them is "could not check", not a verdict on the
// customer's records.
func TestUnknownEdgeAddressesAreALookupFailure(t *testing.T) {
	ctx := context.Background()
	w := domaintest.New(t, domaintest.Options{
		Zones: []string{"example.org.", "petstore.example."}, Projects: projects,
		Config: func(c *customdomain.EngineConfig) { c.EdgeIPs = nil },
	})
	w.Set(t, "petstore.example.", libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("192.0.2.10")})
	w.Set(t, "example.org.", libdns.Address{Name: "@", TTL: time.Hour, IP: netip.MustParseAddr("192.0.2.10")})
	w.DNS.FailWith(target+".", dns.RcodeServerFailure)
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "example.org"); err != nil {
		t.Fatal(err)
	}
	d, err := w.Engine.Verify(ctx, "prj_pro", "example.org")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusPending || codes(d.Diagnosis.Findings) != "LOOKUP_FAILED" || d.Diagnosis.NextAction != customdomain.ActionWait {
		t.Fatalf("edge addresses unknown: %s %q %s, want pending LOOKUP_FAILED wait", d.Status, codes(d.Diagnosis.Findings), d.Diagnosis.NextAction)
	}
	w.DNS.FailWith(target+".", dns.RcodeSuccess)
	if d, err := w.Engine.Verify(ctx, "prj_pro", "example.org"); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("edge addresses known: %s %q (%v), want active", d.Status, codes(d.Diagnosis.Findings), err)
	}
}

// countingStore counts the writes of entries.
type countingStore struct {
	customdomain.Store
	updates atomic.Int64
}

func (s *countingStore) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	s.updates.Add(1)
	return s.Store.UpdateDomain(ctx, e)
}

// A suspended project's live domain waits: the background loop does not
// write it again every minute (it changed nothing a customer sees), only
// at its usual drift-check interval.
func TestSuspendedLiveDomainIsNotRewrittenEveryMinute(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	store := &countingStore{Store: f.store}
	ev := &events{}
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects, c.Store, c.Events = p, store, ev })
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", "shop.example.com")
	f.verify(t, "prj_a", "shop.example.com")
	before, _ := f.store.DomainByName(ctx, "shop.example.com")
	p.SetPlan("prj_a", petstore.PlanFree)
	ev.take()
	store.updates.Store(0)
	for range 3 * 60 { // three hours, a minute at a time
		if _, err := f.engine.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.updates.Load(); n > 3 {
		t.Fatalf("in 3 hours the suspended active domain was written %d times, want at most once an hour", n)
	}
	after, _ := f.store.DomainByName(ctx, "shop.example.com")
	if !after.UpdatedAt.Equal(before.UpdatedAt) || len(after.History) != len(before.History) || len(ev.take()) != 0 {
		t.Fatalf("waiting changed what customers see: updatedAt %v → %v, history %d → %d", before.UpdatedAt, after.UpdatedAt, len(before.History), len(after.History))
	}
}

// Re-verify of a failed domain whose DNS cannot be asked sends it back to
// pending; what the dashboard then shows must not claim its records are
// right, nor keep an old reason.
func TestReverifyOfFailedDomainWithoutDNSSaysSo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	if d, _ := f.runUntil(t, "shop.example.com", customdomain.StatusFailed, start.Add(50*time.Hour)); d.Status != customdomain.StatusFailed {
		t.Fatalf("status %s, want failed", d.Status)
	}
	f.dns.FailWith("shop.example.com.", dns.RcodeServerFailure)
	check := func(d customdomain.Domain) {
		t.Helper()
		if d.Status != customdomain.StatusPending || d.Reason != "" || d.Diagnosis.OK ||
			codes(d.Diagnosis.Findings) != "LOOKUP_FAILED" || d.Diagnosis.NextAction != customdomain.ActionWait {
			t.Fatalf("%s reason %q ok %v findings %q next %s; want pending, LOOKUP_FAILED, wait", d.Status, d.Reason, d.Diagnosis.OK, codes(d.Diagnosis.Findings), d.Diagnosis.NextAction)
		}
	}
	check(f.verify(t, "prj_pro", "shop.example.com"))
	d, err := f.engine.Get(ctx, "prj_pro", "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	check(d)
}
