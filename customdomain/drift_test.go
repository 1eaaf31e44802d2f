package customdomain_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// events records what the engine tells its Events port: each event once,
// as an implementation must (a second hand-off of an ID is a no-op).
type events struct {
	mu   sync.Mutex
	got  []string
	seen map[string]bool
}

func (ev *events) DomainEvent(_ context.Context, projectID string, e customdomain.PendingEvent) error {
	var d customdomain.Domain
	if err := json.Unmarshal(e.Domain, &d); err != nil {
		return err
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.seen[e.ID] {
		return nil
	}
	if ev.seen == nil {
		ev.seen = map[string]bool{}
	}
	ev.seen[e.ID] = true
	ev.got = append(ev.got, projectID+" "+e.Type+" "+d.Name+" "+string(d.Status))
	return nil
}

// take returns what was told since the last take.
func (ev *events) take() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	out := ev.got
	ev.got = nil
	return out
}

// driftWorld is a World whose engine tells ev, with the default drift
// settings (re-check every hour, 72 hours of grace).
func driftWorld(t *testing.T, certs customdomain.CertIssuer, ev *events) *domaintest.World {
	t.Helper()
	return domaintest.New(t, domaintest.Options{
		Projects: projects, CertIssuer: certs,
		Config: func(c *customdomain.EngineConfig) {
			c.Events = ev
			c.EdgeIPs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		},
	})
}

// runUntil runs the background loop at each due time up to until, as the
// clock passes, and leaves the clock at until.
func runUntil(t *testing.T, w *domaintest.World, until time.Time) {
	t.Helper()
	ctx := context.Background()
	for {
		due, err := w.Store.DueDomains(ctx, until, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) == 0 {
			w.Clock.Set(until)
			return
		}
		if due[0].NextCheckAt.After(w.Clock.Now()) {
			w.Clock.Set(due[0].NextCheckAt)
		}
		if _, err := w.Engine.RunDue(ctx, w.Clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, w *domaintest.World, project, name string) customdomain.Domain {
	t.Helper()
	d, err := w.Engine.Get(context.Background(), project, name)
	if err != nil {
		t.Fatalf("Get(%s): %v", name, err)
	}
	return d
}

// TestDriftGraceAndRecovery: an active domain whose CNAME is pointed
// elsewhere is noticed at the next hourly re-check and becomes
// misconfigured, saying where the record points now; it is still served,
// but its certificate is no longer renewed; when the record comes back
// within the grace period it is active again with no customer action.
func TestDriftGraceAndRecovery(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	ev := &events{}
	w := driftWorld(t, certs, ev)
	const name = "shop.example.com"
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	if got, want := ev.take(), []string{
		"prj_pro domain.added shop.example.com pending",
		"prj_pro domain.verified shop.example.com issuing",
		"prj_pro domain.certificate.issued shop.example.com active",
		"prj_pro domain.active shop.example.com active",
	}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}

	// Still right an hour later: checked, nothing changes.
	runUntil(t, w, w.Clock.Now().Add(time.Hour))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusActive || d.Attempts != 2 {
		t.Fatalf("after an hour: %s with %d checks, want active with 2", d.Status, d.Attempts)
	}

	w.Set(t, "example.com.", cname("shop", "shops.other-platform.example.net"))
	runUntil(t, w, w.Clock.Now().Add(time.Hour))
	d := get(t, w, "prj_pro", name)
	if d.Status != customdomain.StatusMisconfigured || !strings.Contains(d.Reason, "points to shops.other-platform.example.net") ||
		d.DriftedAt.IsZero() || d.Diagnosis.NextAction != customdomain.ActionFixDNS || d.Diagnosis.Observed.CNAME != "shops.other-platform.example.net" {
		t.Fatalf("after the record moved: %+v, want misconfigured saying where it points", d)
	}
	if r := w.Engine.Route(name); r.Kind != customdomain.RouteServe {
		t.Fatalf("a misconfigured domain within its grace is not served: %+v", r)
	}
	if !w.Engine.Admits(name) || w.Engine.Renews(name) {
		t.Fatalf("misconfigured: Admits %v Renews %v, want served but not renewed", w.Engine.Admits(name), w.Engine.Renews(name))
	}
	if got := ev.take(); !slices.Equal(got, []string{"prj_pro domain.misconfigured shop.example.com misconfigured"}) {
		t.Fatalf("events %q, want one domain.misconfigured", got)
	}

	// The record comes back on day two: active again by itself.
	runUntil(t, w, w.Clock.Now().Add(24*time.Hour))
	w.Set(t, "example.com.", cname("shop", target))
	runUntil(t, w, w.Clock.Now().Add(30*time.Minute))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusActive || !d.DriftedAt.IsZero() || !w.Engine.Renews(name) {
		t.Fatalf("after the record came back: %s (drifted at %v, renews %v), want active", d.Status, d.DriftedAt, w.Engine.Renews(name))
	}
	if got := ev.take(); !slices.Equal(got, []string{"prj_pro domain.active shop.example.com active"}) {
		t.Fatalf("events %q, want one domain.active", got)
	}
	certs.mu.Lock()
	removed := len(certs.removed)
	certs.mu.Unlock()
	if removed != 0 {
		t.Fatal("the certificate was removed during the grace period")
	}
}

// TestDriftPastGraceReleases: a record that stays away for the whole
// grace period releases the domain: it is no longer served, its
// certificate is removed, the dashboard lists it with why, and the name
// is free for another project; the project dismisses it with Remove.
func TestDriftPastGraceReleases(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	ev := &events{}
	w := driftWorld(t, certs, ev)
	const name = "shop.example.com"
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	ev.take()
	if _, err := w.Zone.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "shop", Type: "CNAME"}}); err != nil {
		t.Fatal(err)
	}
	w.Set(t, "example.com.", addr("shop", "192.0.2.80"))
	runUntil(t, w, w.Clock.Now().Add(time.Hour))
	drifted := get(t, w, "prj_pro", name)
	if drifted.Status != customdomain.StatusMisconfigured || !strings.Contains(drifted.Reason, "resolves to 192.0.2.80") {
		t.Fatalf("after the record moved: %s %q", drifted.Status, drifted.Reason)
	}
	runUntil(t, w, drifted.DriftedAt.Add(72*time.Hour-time.Minute))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusMisconfigured {
		t.Fatalf("a minute before the grace ends: %s, want still misconfigured", d.Status)
	}
	runUntil(t, w, drifted.DriftedAt.Add(72*time.Hour))
	d := get(t, w, "prj_pro", name)
	if d.Status != customdomain.StatusReleased || !strings.Contains(d.Reason, "72 hours") || d.Diagnosis.NextAction != customdomain.ActionNone {
		t.Fatalf("after the grace: %s %q, want released with the reason", d.Status, d.Reason)
	}
	if r := w.Engine.Route(name); r.Kind != customdomain.RouteNone || w.Engine.Admits(name) {
		t.Fatalf("a released domain is still served: %+v", r)
	}
	certs.mu.Lock()
	removed := slices.Clone(certs.removed)
	certs.mu.Unlock()
	if !slices.Equal(removed, []string{name}) {
		t.Fatalf("certificates removed %v, want %s's", removed, name)
	}
	list, err := w.Engine.List(ctx, "prj_pro")
	if err != nil || len(list) != 1 || list[0].Status != customdomain.StatusReleased {
		t.Fatalf("List = %+v, %v; want the released domain, with why", list, err)
	}
	if got := ev.take(); !slices.Equal(got, []string{
		"prj_pro domain.misconfigured shop.example.com misconfigured",
		"prj_pro domain.removed shop.example.com released",
	}) {
		t.Fatalf("events %q", got)
	}
	// The name is free: another project may claim it (with a proof).
	other, created, err := w.Engine.Add(ctx, "prj_business", name)
	if err != nil || !created || !slices.ContainsFunc(other.Records, func(r customdomain.Record) bool { return r.Type == "TXT" }) {
		t.Fatalf("another project's Add = %+v, %v, %v; want created, with an ownership proof", other, created, err)
	}
	if err := w.Engine.Remove(ctx, "prj_pro", name); err != nil {
		t.Fatalf("dismissing the released domain: %v", err)
	}
	if _, err := w.Engine.Get(ctx, "prj_pro", name); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("Get after the dismissal: %v, want not_found", err)
	}
	if d := get(t, w, "prj_business", name); d.Status != customdomain.StatusPending {
		t.Fatalf("the new holder's domain is %s after the old one was dismissed", d.Status)
	}
}

// TestRemoveEmitsRemoved: a customer's removal is told once, with the
// domain as removed, after it is stored; so is an add.
func TestRemoveEmitsRemoved(t *testing.T) {
	ctx := context.Background()
	ev := &events{}
	w := driftWorld(t, nil, ev)
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.Remove(ctx, "prj_pro", "shop.example.com"); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("second Remove: %v, want not_found", err)
	}
	if got, want := ev.take(), []string{
		"prj_pro domain.added shop.example.com pending",
		"prj_pro domain.removed shop.example.com removed",
	}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// TestReleasedDomainIsNoRedirectTarget: a released domain no longer
// holds its name, which another project may take, so its old project can
// neither redirect to it nor make it the primary: visitors would be sent
// to the other project's site.
func TestReleasedDomainIsNoRedirectTarget(t *testing.T) {
	ctx := context.Background()
	w := driftWorld(t, nil, &events{})
	w.Set(t, "example.com.", cname("shop", target), cname("www", target))
	for _, name := range []string{"shop.example.com", "www.example.com"} {
		if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
			t.Fatal(err)
		}
		if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
			t.Fatalf("Verify(%s) = %s, %v; want active", name, d.Status, err)
		}
	}
	if _, err := w.Zone.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "shop", Type: "CNAME"}}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, w, w.Clock.Now().Add(time.Hour+72*time.Hour))
	if d := get(t, w, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusReleased {
		t.Fatalf("shop is %s, want released", d.Status)
	}
	for _, c := range []customdomain.Config{
		{Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com"}}},
		{Primary: "shop.example.com"},
	} {
		_, err := w.Engine.SetConfig(ctx, "prj_pro", c)
		if petstore.ErrorCode(err) != petstore.CodeInvalidRequest || !strings.Contains(petstore.ErrorMessage(err), "shop.example.com") {
			t.Fatalf("SetConfig(%+v) = %v, want invalid_request naming the released domain", c, err)
		}
	}
	// A redirect to it stored before SetConfig refused one is not followed.
	if err := w.Store.PutDomainConfig(ctx, customdomain.Config{ProjectID: "prj_pro", Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com", Status: 301}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := w.Engine.Route("www.example.com"); r.Kind != customdomain.RouteServe {
		t.Fatalf("Route(www) = %+v, want served, not sent to a name the project no longer holds", r)
	}
}
