package customdomain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

const target = domaintest.Target

var start = domaintest.Start

// projects is the platform's side: plans and deploys.
var projects = domaintest.NewProjects(
	customdomain.Project{ID: "prj_pro", Plan: petstore.PlanPro, Deployed: true},
	customdomain.Project{ID: "prj_business", Plan: petstore.PlanBusiness, Deployed: true},
	customdomain.Project{ID: "prj_free", Plan: petstore.PlanFree, Deployed: true},
	customdomain.Project{ID: "prj_new", Plan: petstore.PlanEnterprise, Deployed: false},
)

// issuer stands in for the certificate layer (a later issue): it records
// calls and reports what the test sets.
type issuer struct {
	mu       sync.Mutex
	state    map[string]customdomain.CertStatus
	requests []string
	removed  []string
	stored   bool         // certificates already exist in shared storage: Request finds them at once
	asked    atomic.Int64 // Status calls
}

func (i *issuer) Request(_ context.Context, name string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.requests = append(i.requests, name)
	i.state[name] = customdomain.CertStatus{State: customdomain.CertIssuing}
	if i.stored {
		i.state[name] = customdomain.CertStatus{State: customdomain.CertIssued}
	}
	return nil
}

func (i *issuer) Status(_ context.Context, name string) (customdomain.CertStatus, error) {
	i.asked.Add(1)
	i.mu.Lock()
	defer i.mu.Unlock()
	if st, ok := i.state[name]; ok {
		return st, nil
	}
	return customdomain.CertStatus{State: customdomain.CertNone}, nil
}

func (i *issuer) Remove(_ context.Context, name string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.removed = append(i.removed, name)
	delete(i.state, name)
	return nil
}

func (i *issuer) set(name string, st customdomain.CertStatus) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.state[name] = st
}

type fixture struct {
	world  *domaintest.World
	engine *customdomain.Engine
	store  *memstore.Store
	zone   *memzone.Provider
	dns    *memzone.Server
	clock  *testenv.Clock
}

// newFixture starts a DNS server on 127.0.0.1 for example.com, example.org
// and xn--bcher-kva.example, and an engine that asks it. certs may be nil.
func newFixture(t testing.TB, certs customdomain.CertIssuer) *fixture {
	t.Helper()
	store := memstore.New()
	f := newFixtureOn(t, store, certs)
	f.store = store
	return f
}

// newFixtureOn is newFixture on store; its store field is nil.
func newFixtureOn(t testing.TB, store customdomain.Store, certs customdomain.CertIssuer) *fixture {
	t.Helper()
	w := domaintest.New(t, domaintest.Options{
		Zones: []string{"example.com.", "example.org.", "xn--bcher-kva.example."},
		Store: store, Projects: projects, Start: start, CertIssuer: certs,
		Config: func(c *customdomain.EngineConfig) {
			c.CNAMETarget = target + "."
			c.PlatformDomains = []string{"petstore.example", "localhost"}
			c.EdgeIPs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
		},
	})
	return &fixture{world: w, engine: w.Engine, zone: w.Zone, dns: w.DNS, clock: w.Clock}
}

// replica is another process's engine on the fixture's store, DNS server
// and clock, with the fixture's settings; edit sets what differs.
func (f *fixture) replica(t testing.TB, edit func(*customdomain.EngineConfig)) *customdomain.Engine {
	t.Helper()
	return f.world.Replica(t, edit)
}

// set replaces the records of one name and type in the test zone.
func (f *fixture) set(t *testing.T, zone string, recs ...libdns.Record) {
	t.Helper()
	if _, err := f.zone.SetRecords(context.Background(), zone, recs); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) add(t *testing.T, project, name string) customdomain.Domain {
	t.Helper()
	d, created, err := f.engine.Add(context.Background(), project, name)
	if err != nil {
		t.Fatalf("Add(%s, %s): %v", project, name, err)
	}
	if !created {
		t.Fatalf("Add(%s, %s): not created", project, name)
	}
	return d
}

func (f *fixture) verify(t *testing.T, project, name string) customdomain.Domain {
	t.Helper()
	d, err := f.engine.Verify(context.Background(), project, name)
	if err != nil {
		t.Fatalf("Verify(%s): %v", name, err)
	}
	return d
}

func cname(name, to string) libdns.Record {
	return libdns.CNAME{Name: name, TTL: time.Hour, Target: to + "."}
}

func addr(name, ip string) libdns.Record {
	return libdns.Address{Name: name, TTL: time.Hour, IP: netip.MustParseAddr(ip)}
}

func codes(fs []customdomain.Finding) string {
	var c []string
	for _, f := range fs {
		c = append(c, f.Code)
	}
	return strings.Join(c, ",")
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := petstore.ErrorCode(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func TestAddRules(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	for _, tc := range []struct {
		name, project, domain, code string
	}{
		{"free plan", "prj_free", "free.example.com", petstore.CodePlanRequired},
		{"no deploy", "prj_new", "new.example.com", petstore.CodeDeployRequired},
		{"unknown project", "prj_nobody", "x.example.com", petstore.CodeNotFound},
		{"taken by another project", "prj_business", "shop.example.com", petstore.CodeConflict},
		{"taken, other form and case", "prj_business", "SHOP.example.com.", petstore.CodeConflict},
		{"platform's cname target", "prj_pro", target, petstore.CodeInvalidRequest},
		{"under a platform domain", "prj_pro", "x.petstore.example", petstore.CodeInvalidRequest},
		{"platform localhost", "prj_pro", "shop.localhost", petstore.CodeInvalidRequest},
		{"invalid name", "prj_pro", "shop.*.example.com", petstore.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.engine.Add(ctx, tc.project, tc.domain)
			wantCode(t, err, tc.code)
		})
	}
	t.Run("adding again returns the existing domain", func(t *testing.T) {
		d, created, err := f.engine.Add(ctx, "prj_pro", "Shop.Example.com")
		if err != nil || created || d.Name != "shop.example.com" || d.Status != customdomain.StatusPending {
			t.Fatalf("Add again = %+v, created %v, %v; want the pending domain, not created", d, created, err)
		}
	})
	t.Run("conflict message does not name the owner", func(t *testing.T) {
		_, _, err := f.engine.Add(ctx, "prj_business", "shop.example.com")
		if strings.Contains(err.Error(), "prj_pro") {
			t.Fatalf("conflict %q leaks the other project", err)
		}
	})
	t.Run("another project cannot see it", func(t *testing.T) {
		_, err := f.engine.Get(ctx, "prj_business", "shop.example.com")
		wantCode(t, err, petstore.CodeNotFound)
		_, err = f.engine.Verify(ctx, "prj_business", "shop.example.com")
		wantCode(t, err, petstore.CodeNotFound)
		wantCode(t, f.engine.Remove(ctx, "prj_business", "shop.example.com"), petstore.CodeNotFound)
	})
}

func TestRacingProjectsOneWins(t *testing.T) {
	f := newFixture(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []string{"prj_pro", "prj_business"} {
		wg.Go(func() { _, _, errs[i] = f.engine.Add(context.Background(), p, "race.example.com") })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("both or neither won: %v / %v", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil {
			wantCode(t, err, petstore.CodeConflict)
		}
	}
}

func TestInstructions(t *testing.T) {
	f := newFixture(t, nil)
	sub := f.add(t, "prj_pro", "shop.example.com")
	if got, want := sub.Records, []customdomain.Record{{Type: "CNAME", Name: "shop", Value: target, TTL: 3600}}; len(got) != 2 || got[0] != want[0] {
		t.Fatalf("subdomain records = %+v, want %+v first", got, want)
	}
	// Beside it, the ownership TXT record for a proxied record: optional.
	if txt := sub.Records[1]; txt.Type != "TXT" || txt.Name != "_petstore-challenge.shop" || !strings.HasPrefix(txt.Value, "petstore-verify=") || !txt.Optional ||
		!strings.Contains(sub.Note, "proxies or flattens") {
		t.Fatalf("subdomain TXT record %+v, note %q; want an optional _petstore-challenge.shop explained", txt, sub.Note)
	}
	if sub.Kind != customdomain.KindSubdomain || len(sub.Alternatives) != 0 {
		t.Fatalf("subdomain = %+v", sub)
	}
	apex := f.add(t, "prj_pro", "example.org")
	if got := apex.Records; len(got) != 2 || got[0] != (customdomain.Record{Type: "ALIAS", Name: "@", Value: target, TTL: 3600}) || got[1].Name != "_petstore-challenge" {
		t.Fatalf("apex records = %+v, want one ALIAS at @", got)
	}
	want := []customdomain.Record{{Type: "A", Name: "@", Value: "127.0.0.1", TTL: 3600}, {Type: "AAAA", Name: "@", Value: "::1", TTL: 3600}}
	if len(apex.Alternatives) != 2 || apex.Alternatives[0] != want[0] || apex.Alternatives[1] != want[1] {
		t.Fatalf("apex alternatives = %+v, want %+v", apex.Alternatives, want)
	}
	if !strings.Contains(apex.Note, "Not every DNS provider supports") {
		t.Fatalf("apex note = %q", apex.Note)
	}
	idn := f.add(t, "prj_pro", "laden.Bücher.example")
	if idn.Name != "laden.xn--bcher-kva.example" || idn.UnicodeName != "laden.bücher.example" || idn.Records[0].Name != "laden" {
		t.Fatalf("IDN domain = %+v", idn)
	}
	if h := sub.History; len(h) != 1 || h[0].Status != customdomain.StatusPending || !h[0].At.Equal(start) {
		t.Fatalf("history = %+v, want pending at %s", h, start)
	}
}

func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		domain   string
		records  []libdns.Record // in zone example.com. or example.org.
		zone     string
		status   customdomain.Status
		findings string
		action   customdomain.Action
		says     []string // in the first finding's message and fix
		observed customdomain.Observed
	}{
		{
			name: "CNAME subdomain verifies", domain: "shop.example.com", zone: "example.com.",
			records: []libdns.Record{cname("shop", target)}, status: customdomain.StatusActive, action: customdomain.ActionNone,
			observed: customdomain.Observed{CNAME: target, Addresses: []string{}},
		},
		{
			name: "apex with edge addresses verifies", domain: "example.org", zone: "example.org.",
			records: []libdns.Record{addr("@", "127.0.0.1"), addr("@", "::1")}, status: customdomain.StatusActive, action: customdomain.ActionNone,
			observed: customdomain.Observed{Addresses: []string{"127.0.0.1", "::1"}},
		},
		{
			name: "an A record blocks the CNAME", domain: "shop.example.com", zone: "example.com.",
			records: []libdns.Record{addr("shop", "203.0.113.9")}, status: customdomain.StatusPending,
			findings: "CONFLICTING_RECORD", action: customdomain.ActionFixDNS,
			says:     []string{"shop.example.com has an A record (203.0.113.9), which blocks the CNAME", "Delete the A and AAAA records for shop", "shop → " + target},
			observed: customdomain.Observed{Addresses: []string{"203.0.113.9"}},
		},
		{
			name: "a TXT record blocks the CNAME", domain: "shop.example.com", zone: "example.com.",
			records: []libdns.Record{libdns.TXT{Name: "shop", TTL: time.Hour, Text: "v=spf1 -all"}, libdns.MX{Name: "shop", TTL: time.Hour, Preference: 10, Target: "mx.example.net."}},
			status:  customdomain.StatusPending, findings: "CONFLICTING_RECORD", action: customdomain.ActionFixDNS,
			says:     []string{"shop.example.com has TXT and MX records, which block the CNAME", "Delete the TXT and MX records for shop", "shop → " + target},
			observed: customdomain.Observed{Addresses: []string{}},
		},
		{
			name: "apex TXT and MX records beside the ALIAS are no conflict", domain: "example.org", zone: "example.org.",
			records: []libdns.Record{libdns.TXT{Name: "@", TTL: time.Hour, Text: "v=spf1 -all"}, libdns.MX{Name: "@", TTL: time.Hour, Preference: 10, Target: "mx.example.net."}},
			status:  customdomain.StatusPending, findings: "NO_RECORDS", action: customdomain.ActionWait,
			observed: customdomain.Observed{Addresses: []string{}},
		},
		{
			name: "wrong CNAME names the current target", domain: "shop.example.com", zone: "example.com.",
			records: []libdns.Record{cname("shop", "elsewhere.example.net")}, status: customdomain.StatusPending,
			findings: "CNAME_MISMATCH", action: customdomain.ActionFixDNS,
			says:     []string{"shop.example.com points to elsewhere.example.net", "Change the CNAME value to " + target},
			observed: customdomain.Observed{CNAME: "elsewhere.example.net", Addresses: []string{}},
		},
		{
			name: "apex with foreign addresses", domain: "example.org", zone: "example.org.",
			records: []libdns.Record{addr("@", "127.0.0.1"), addr("@", "198.51.100.7")}, status: customdomain.StatusPending,
			findings: "APEX_FOREIGN_IPS", action: customdomain.ActionFixDNS,
			says:     []string{"example.org resolves to 198.51.100.7, which is not an address of this platform", "ALIAS", "127.0.0.1"},
			observed: customdomain.Observed{Addresses: []string{"127.0.0.1", "198.51.100.7"}},
		},
		{
			name: "no records yet", domain: "shop.example.com", zone: "example.com.",
			status: customdomain.StatusPending, findings: "NO_RECORDS", action: customdomain.ActionWait,
			says:     []string{"up to 48 hours", "Create a CNAME record with name shop and value " + target},
			observed: customdomain.Observed{Addresses: []string{}},
		},
		{
			name: "IDN subdomain verifies", domain: "laden.bücher.example", zone: "xn--bcher-kva.example.",
			records: []libdns.Record{cname("laden", target)}, status: customdomain.StatusActive, action: customdomain.ActionNone,
			observed: customdomain.Observed{CNAME: target, Addresses: []string{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			if len(tc.records) > 0 {
				f.set(t, tc.zone, tc.records...)
			}
			added := f.add(t, "prj_pro", tc.domain)
			f.clock.Advance(5 * time.Second)
			d := f.verify(t, "prj_pro", tc.domain)
			if d.Status != tc.status || codes(d.Diagnosis.Findings) != tc.findings || d.Diagnosis.NextAction != tc.action {
				t.Fatalf("after Verify: status %s, findings %q, next %s; want %s, %q, %s (%+v)",
					d.Status, codes(d.Diagnosis.Findings), d.Diagnosis.NextAction, tc.status, tc.findings, tc.action, d.Diagnosis)
			}
			if d.Diagnosis.OK != (tc.findings == "") {
				t.Fatalf("Diagnosis.OK = %v with findings %q", d.Diagnosis.OK, tc.findings)
			}
			if d.Diagnosis.Observed.CNAME != tc.observed.CNAME || strings.Join(d.Diagnosis.Observed.Addresses, " ") != strings.Join(tc.observed.Addresses, " ") {
				t.Fatalf("observed %+v, want %+v", d.Diagnosis.Observed, tc.observed)
			}
			for _, s := range tc.says {
				fd := d.Diagnosis.Findings[0]
				if !strings.Contains(fd.Message+" / "+fd.Fix, s) {
					t.Fatalf("finding %+v does not say %q", fd, s)
				}
			}
			if d.Attempts != 1 {
				t.Fatalf("attempts = %d, want 1", d.Attempts)
			}
			route := f.engine.Route(added.Name)
			if live := tc.status == customdomain.StatusActive; (route.Kind == customdomain.RouteServe) != live || live && route.ProjectID != "prj_pro" {
				t.Fatalf("Route(%s) = %+v with status %s", added.Name, route, d.Status)
			}
			if tc.status == customdomain.StatusActive {
				var got []customdomain.Status
				for _, h := range d.History {
					got = append(got, h.Status)
				}
				if strings.Join(statusStrings(got), " ") != "pending verified active" {
					t.Fatalf("history = %v, want pending verified active", got)
				}
				if !d.History[2].At.Equal(start.Add(5*time.Second)) || !d.VerifiedAt.Equal(start.Add(5*time.Second)) {
					t.Fatalf("history times %+v, verifiedAt %s", d.History, d.VerifiedAt)
				}
			}
		})
	}
}

func statusStrings(s []customdomain.Status) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

func TestLookupFailureIsNotAFailure(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_pro", "shop.example.com")
	f.dns.FailWith("shop.example.com.", dns.RcodeServerFailure)
	d := f.verify(t, "prj_pro", "shop.example.com")
	if d.Status != customdomain.StatusPending || codes(d.Diagnosis.Findings) != "LOOKUP_FAILED" || d.Diagnosis.NextAction != customdomain.ActionWait {
		t.Fatalf("SERVFAIL gave %s %q %s, want pending LOOKUP_FAILED wait", d.Status, codes(d.Diagnosis.Findings), d.Diagnosis.NextAction)
	}
	if msg := d.Diagnosis.Findings[0].Message; !strings.Contains(msg, "will be retried") || !strings.Contains(msg, "not a verification failure") {
		t.Fatalf("message %q does not say it will retry", msg)
	}
	// Even past the 48-hour window, "could not check" never fails a domain.
	f.clock.Set(start.Add(49 * time.Hour))
	if _, err := f.engine.RunDue(context.Background(), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.engine.Get(context.Background(), "prj_pro", "shop.example.com"); d.Status != customdomain.StatusPending {
		t.Fatalf("after 49 h of SERVFAIL status = %s, want pending", d.Status)
	}
	f.dns.FailWith("shop.example.com.", dns.RcodeSuccess)
	if d := f.verify(t, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("after DNS recovered status = %s, want active", d.Status)
	}
}

// runUntil runs the background loop at each due time until the domain's
// status is want or the clock passes limit, and returns the number of
// checks made.
func (f *fixture) runUntil(t *testing.T, name string, want customdomain.Status, limit time.Time) (customdomain.Domain, int) {
	t.Helper()
	ctx := context.Background()
	runs := 0
	for {
		en, err := f.store.DomainByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.engine.Get(ctx, en.ProjectID, name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == want || f.clock.Now().After(limit) {
			return d, runs
		}
		due, err := f.store.DueDomains(ctx, start.Add(1000*time.Hour), 1)
		if err != nil || len(due) == 0 {
			t.Fatalf("nothing scheduled while %s is %s (%v)", name, d.Status, err)
		}
		f.clock.Set(due[0].NextCheckAt)
		n, err := f.engine.RunDue(ctx, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		runs += n
	}
}

func TestBackgroundRecheckPicksUpRecord(t *testing.T) {
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	ctx := context.Background()
	if n, _ := f.engine.RunDue(ctx, start.Add(59*time.Second)); n != 0 {
		t.Fatalf("RunDue before the first minute checked %d domains", n)
	}
	d, runs := f.runUntil(t, "shop.example.com", customdomain.StatusActive, start.Add(10*time.Minute))
	if d.Status != customdomain.StatusPending || runs < 9 || codes(d.Diagnosis.Findings) != "NO_RECORDS" {
		t.Fatalf("after 10 minutes without records: %s after %d checks, findings %q", d.Status, runs, codes(d.Diagnosis.Findings))
	}
	if route := f.engine.Route("shop.example.com"); route.Kind != customdomain.RouteNone {
		t.Fatalf("pending domain routed: %+v", route)
	}
	f.set(t, "example.com.", cname("shop", target))
	appeared := f.clock.Now()
	d, _ = f.runUntil(t, "shop.example.com", customdomain.StatusActive, appeared.Add(2*time.Minute))
	if d.Status != customdomain.StatusActive {
		t.Fatalf("record appeared but status is %s", d.Status)
	}
	if at := d.History[len(d.History)-1].At; at.Sub(appeared) > time.Minute {
		t.Fatalf("activated %s after the record appeared, want within a minute", at.Sub(appeared))
	}
	if route := f.engine.Route("shop.example.com"); route.Kind != customdomain.RouteServe || route.ProjectID != "prj_pro" {
		t.Fatalf("Route = %+v, want served by prj_pro", route)
	}
}

func TestPendingFailsAfter48Hours(t *testing.T) {
	f := newFixture(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	d, runs := f.runUntil(t, "shop.example.com", customdomain.StatusFailed, start.Add(50*time.Hour))
	if d.Status != customdomain.StatusFailed {
		t.Fatalf("after 50 h status = %s, want failed", d.Status)
	}
	last := d.History[len(d.History)-1]
	if !last.At.Equal(start.Add(48*time.Hour)) || !strings.Contains(d.Reason, "48 hours") || last.Reason != d.Reason {
		t.Fatalf("failed at %s with reason %q, want at +48h saying 48 hours", last.At.Sub(start), d.Reason)
	}
	// Every minute for the first hour, then backing off: far fewer than
	// one check a minute over two days, but at least the first hour's.
	if runs < 60 || runs > 200 || d.Attempts != runs {
		t.Fatalf("%d checks (%d attempts) over 48 h, want 60..200", runs, d.Attempts)
	}
	if d.Diagnosis.NextAction != customdomain.ActionFixDNS {
		t.Fatalf("failed with NO_RECORDS: next action %s, want fix_dns", d.Diagnosis.NextAction)
	}
	// Re-verify of a failed domain starts a new window; with the record
	// in place it goes live.
	f.set(t, "example.com.", cname("shop", target))
	if d := f.verify(t, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Re-verify after fixing DNS: %s, want active", d.Status)
	}
}

func TestCertificateFlow(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("blog", target))

	f.add(t, "prj_pro", "shop.example.com")
	d := f.verify(t, "prj_pro", "shop.example.com")
	if d.Status != customdomain.StatusIssuing || d.Certificate.State != customdomain.CertIssuing || d.Diagnosis.NextAction != customdomain.ActionWait {
		t.Fatalf("after Verify with an issuer: %s, cert %s, next %s; want issuing", d.Status, d.Certificate.State, d.Diagnosis.NextAction)
	}
	if route := f.engine.Route("shop.example.com"); route.Kind != customdomain.RouteNone {
		t.Fatalf("issuing domain routed: %+v", route)
	}
	certs.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertIssued})
	if err := f.engine.CertificateChanged(ctx, "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if route := f.engine.Route("shop.example.com"); route.Kind != customdomain.RouteServe {
		t.Fatalf("issued domain not routed: %+v", route)
	}

	// The background loop also asks the issuer, and a refusal fails the
	// domain with the CA's reason; Re-verify starts a new attempt.
	f.add(t, "prj_pro", "blog.example.com")
	f.verify(t, "prj_pro", "blog.example.com")
	certs.set("blog.example.com", customdomain.CertStatus{State: customdomain.CertFailed, Reason: "CAA records forbid the CA",
		Findings: []customdomain.Finding{{Code: customdomain.FindingCAABlocksCA, Message: "CAA blocks", Fix: "add a CAA record"}}})
	f.clock.Advance(time.Minute)
	if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	d, _ = f.engine.Get(ctx, "prj_pro", "blog.example.com")
	if d.Status != customdomain.StatusFailed || d.Reason != "CAA records forbid the CA" || d.Diagnosis.NextAction != customdomain.ActionFixDNS || codes(d.Diagnosis.Findings) != "CAA_BLOCKS_CA" {
		t.Fatalf("refused certificate: %s %q next %s findings %q", d.Status, d.Reason, d.Diagnosis.NextAction, codes(d.Diagnosis.Findings))
	}
	d = f.verify(t, "prj_pro", "blog.example.com")
	if d.Status != customdomain.StatusIssuing || len(certs.requests) != 3 {
		t.Fatalf("Re-verify: %s after %d requests, want issuing after 3", d.Status, len(certs.requests))
	}
	if !d.VerifiedAt.Equal(f.clock.Now()) {
		t.Fatalf("VerifiedAt = %s, want the Re-verify time %s (the certificate layer times 30 minutes from it)", d.VerifiedAt, f.clock.Now())
	}
}

// TestExpiredCertificateShows: an active domain whose certificate the
// certificate layer reports expired (renewals kept failing) stays served,
// but its diagnosis is not OK and says what to check, and the project is
// told domain.certificate.failed at the next check.
func TestExpiredCertificateShows(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	ev := &events{}
	w := driftWorld(t, certs, ev)
	if _, err := w.Zone.SetRecords(ctx, "example.com.", []libdns.Record{cname("shop", domaintest.Target)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify = %s, %v; want active", d.Status, err)
	}
	notAfter := w.Clock.Now().Add(time.Hour)
	certs.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertFailed, Reason: "the certificate expired and has not been renewed", NotAfter: notAfter,
		Findings: []customdomain.Finding{customdomain.CertExpiredFinding("shop.example.com", notAfter, "")}})
	ev.take()
	runUntil(t, w, w.Clock.Now().Add(customdomain.DefaultRecheckActive))
	d := get(t, w, "prj_pro", "shop.example.com")
	if d.Status != customdomain.StatusActive || d.Diagnosis.OK || d.Diagnosis.NextAction != customdomain.ActionFixDNS || codes(d.Diagnosis.Findings) != customdomain.FindingCertExpired {
		t.Fatalf("expired certificate: %s, ok %v, next %s, findings %q; want active, not OK, fix_dns, CERT_EXPIRED", d.Status, d.Diagnosis.OK, d.Diagnosis.NextAction, codes(d.Diagnosis.Findings))
	}
	if got := ev.take(); !slices.Contains(got, "prj_pro domain.certificate.failed shop.example.com active") {
		t.Fatalf("events %v, want domain.certificate.failed", got)
	}
	if r := w.Engine.Route("shop.example.com"); r.Kind != customdomain.RouteServe {
		t.Fatalf("Route = %+v, want still served", r)
	}
}

// A certificate another process already obtained into shared storage is
// found by Request at once, before Verify has stored the issuing state:
// Verify must still end active, not wait for the next background check.
func TestVerifyFindsStoredCertificate(t *testing.T) {
	certs := &issuer{state: map[string]customdomain.CertStatus{}, stored: true}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_pro", "shop.example.com")
	d := f.verify(t, "prj_pro", "shop.example.com")
	if d.Status != customdomain.StatusActive {
		t.Fatalf("Verify with a stored certificate: %s, want active", d.Status)
	}
	if route := f.engine.Route("shop.example.com"); route.Kind != customdomain.RouteServe {
		t.Fatalf("not routed after Verify: %+v", route)
	}
}

// TestDomainJSON checks that a Domain encodes as the dashboard API's
// Domain object (issue 7's example).
func TestDomainJSON(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", "elsewhere.example.net"))
	f.add(t, "prj_pro", "shop.example.com")
	d := f.verify(t, "prj_pro", "shop.example.com")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"name":"shop.example.com","unicodeName":"shop.example.com","kind":"subdomain"`,
		`"status":"pending"`,
		`"records":[{"type":"CNAME","name":"shop","value":"edge.petstore.example","ttl":3600},{"type":"TXT","name":"_petstore-challenge.shop","value":"petstore-verify=`,
		`"diagnosis":{"ok":false,"nextAction":"fix_dns","observed":{"cname":"elsewhere.example.net","addresses":[]},"findings":[{"code":"CNAME_MISMATCH","message":"shop.example.com points to elsewhere.example.net","fix":"Change the CNAME value to edge.petstore.example"`,
		`"certificate":{"status":"none"}`,
		`"history":[{"status":"pending","at":"2026-11-22T10:00:00Z"}]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("JSON\n%s\ndoes not contain\n%s", b, want)
		}
	}
	if strings.Contains(string(b), "prj_pro") {
		t.Fatalf("JSON leaks the project id: %s", b)
	}
}

// A process that did not verify the name (a restart, or another process
// sharing the store) has an issuer that knows nothing about it: the
// background check asks that issuer again, and the 30-minute finding is
// timed from the stored verification, not from the issuer's memory.
func TestIssuingSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		issues bool // the fresh issuer obtains the certificate when asked
		want   customdomain.Status
		action customdomain.Action
		codes  string
	}{
		{"fresh issuer obtains it", true, customdomain.StatusActive, customdomain.ActionNone, ""},
		{"fresh issuer never does", false, customdomain.StatusIssuing, customdomain.ActionReverify, customdomain.FindingCertPendingTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, &issuer{state: map[string]customdomain.CertStatus{}})
			f.set(t, "example.com.", cname("shop", target))
			f.add(t, "prj_pro", "shop.example.com")
			if d := f.verify(t, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusIssuing {
				t.Fatalf("after Verify: %s, want issuing", d.Status)
			}
			fresh := &issuer{state: map[string]customdomain.CertStatus{}, stored: tc.issues}
			e2 := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = fresh })
			for range 31 {
				f.clock.Advance(time.Minute)
				if _, err := e2.RunDue(ctx, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			d, err := e2.Get(ctx, "prj_pro", "shop.example.com")
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != tc.want || d.Diagnosis.NextAction != tc.action || codes(d.Diagnosis.Findings) != tc.codes {
				t.Fatalf("31 minutes later: %s, certificate %s, next %s, findings %q; want %s, next %s, findings %q",
					d.Status, d.Certificate.State, d.Diagnosis.NextAction, codes(d.Diagnosis.Findings), tc.want, tc.action, tc.codes)
			}
			fresh.mu.Lock()
			n := len(fresh.requests)
			fresh.mu.Unlock()
			if n == 0 || n > 31 {
				t.Fatalf("the fresh issuer was asked %d times in 31 checks, want at least once and at most once per check", n)
			}
			if tc.codes != "" {
				// Every process shows it, and the original one too.
				d, _ := f.engine.Get(ctx, "prj_pro", "shop.example.com")
				last := d.Diagnosis.Findings[len(d.Diagnosis.Findings)-1]
				if !strings.Contains(last.Message, "30 minutes after verification") {
					t.Fatalf("message %q does not say how long, in words", last.Message)
				}
				fix := last.Fix
				for _, step := range []string{"still verifies", "CAA", "Re-verify"} {
					if !strings.Contains(fix, step) {
						t.Fatalf("fix %q does not mention %q", fix, step)
					}
				}
			}
		})
	}
}

// flakyRemove is an issuer whose Remove fails the first failures times.
type flakyRemove struct {
	*issuer
	failures int
	calls    int
}

func (i *flakyRemove) Remove(ctx context.Context, name string) error {
	i.mu.Lock()
	i.calls++
	fail := i.calls <= i.failures
	i.mu.Unlock()
	if fail {
		return errors.New("certificate storage is down")
	}
	return i.issuer.Remove(ctx, name)
}

// A certificate that cannot be removed does not undo or fail a removal:
// Remove succeeds (a retried DELETE would only find nothing), and the
// background loop removes the certificate later, unless the name was
// attached again meanwhile.
func TestRemoveSurvivesCertificateFailure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readd       bool // the name is added and verified again before the retry
		wantRemoved int  // certificates the issuer removed after the retry
	}{
		{"retried in the background", false, 1},
		{"not retried once the name is back", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			certs := &flakyRemove{issuer: &issuer{state: map[string]customdomain.CertStatus{}, stored: true}, failures: 1}
			f := newFixture(t, certs)
			f.set(t, "example.com.", cname("shop", target))
			f.add(t, "prj_pro", "shop.example.com")
			if d := f.verify(t, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusActive {
				t.Fatalf("after Verify: %s, want active", d.Status)
			}
			if err := f.engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatalf("Remove with a failing certificate removal = %v, want nil: the domain is removed", err)
			}
			_, err := f.engine.Get(ctx, "prj_pro", "shop.example.com")
			wantCode(t, err, petstore.CodeNotFound)
			if r := f.engine.Route("shop.example.com"); r.Kind != customdomain.RouteNone {
				t.Fatalf("removed domain still routed: %+v", r)
			}
			if tc.readd {
				f.add(t, "prj_business", "shop.example.com")
				f.verify(t, "prj_business", "shop.example.com")
			}
			f.clock.Advance(time.Minute)
			if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := f.engine.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
				t.Fatal(err)
			}
			certs.mu.Lock()
			removed := len(certs.removed)
			certs.mu.Unlock()
			if removed != tc.wantRemoved {
				t.Fatalf("certificates removed after the background retries: %d, want %d", removed, tc.wantRemoved)
			}
		})
	}
}

// Records the engine writes at the customer's DNS provider (memzone through
// dnsconfig, served by a real DNS server) verify the domain and are deleted
// again on removal; the customer's other records stay.
func TestConfigureDNSThenRemove(t *testing.T) {
	for _, tc := range []struct {
		name, domain, zone, lookup, rrtype string
	}{
		{"subdomain CNAME", "shop.example.com", "example.com.", "shop.example.com", "CNAME"},
		{"apex addresses", "example.org", "example.org.", "example.org", "A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, nil)
			f.set(t, tc.zone, libdns.TXT{Name: "@", TTL: time.Hour, Text: "customer's own"})
			resolver := dnsresolver.New(f.dns.Addr())
			e := f.replica(t, func(c *customdomain.EngineConfig) {
				c.DNS = func(projectID string) customdomain.DNSConfigurator {
					if projectID != "prj_pro" {
						return nil
					}
					return dnsconfig.New(f.zone)
				}
			})
			if _, _, err := e.Add(ctx, "prj_pro", tc.domain); err != nil {
				t.Fatal(err)
			}
			findings, err := e.ConfigureDNS(ctx, "prj_pro", tc.domain)
			if err != nil || len(findings) != 0 {
				t.Fatalf("ConfigureDNS = %+v, %v; want no findings", findings, err)
			}
			if recs, err := resolver.Lookup(ctx, tc.lookup, tc.rrtype); err != nil || len(recs) == 0 {
				t.Fatalf("after ConfigureDNS the DNS server has no %s at %s (%v)", tc.rrtype, tc.lookup, err)
			}
			if d, err := e.Verify(ctx, "prj_pro", tc.domain); err != nil || d.Status != customdomain.StatusActive {
				t.Fatalf("Verify after ConfigureDNS = %s (%v), findings %q; want active", d.Status, err, codes(d.Diagnosis.Findings))
			}
			if err := e.Remove(ctx, "prj_pro", tc.domain); err != nil {
				t.Fatal(err)
			}
			if recs, err := resolver.Lookup(ctx, tc.lookup, tc.rrtype); err != nil || len(recs) != 0 {
				t.Fatalf("after Remove the DNS server still has %+v (%v)", recs, err)
			}
			if recs, err := resolver.Lookup(ctx, strings.TrimSuffix(tc.zone, "."), "TXT"); err != nil || len(recs) != 1 {
				t.Fatalf("the customer's own TXT record: %+v (%v), want it kept", recs, err)
			}
		})
	}
	t.Run("project without a provider", func(t *testing.T) {
		f := newFixture(t, nil)
		f.add(t, "prj_pro", "shop.example.com")
		_, err := f.engine.ConfigureDNS(context.Background(), "prj_pro", "shop.example.com")
		wantCode(t, err, petstore.CodeInvalidRequest)
	})
}

// TestDomainCap: a project holds at most MaxDomainsPerProject domains (50
// by default); one more is invalid_request saying so, re-adding a held name
// still answers it, concurrent adds cannot pass the cap together, and a
// removed domain frees its slot.
func TestDomainCap(t *testing.T) {
	ctx := context.Background()
	newEngine := func(t *testing.T, max int) *customdomain.Engine {
		return domaintest.New(t, domaintest.Options{Projects: projects, Config: func(c *customdomain.EngineConfig) {
			c.MaxDomainsPerProject = max
		}}).Engine
	}
	t.Run("default 50", func(t *testing.T) {
		e := newEngine(t, 0)
		for i := range customdomain.DefaultMaxDomainsPerProject {
			if _, _, err := e.Add(ctx, "prj_pro", fmt.Sprintf("s%d.example.com", i)); err != nil {
				t.Fatalf("domain %d: %v", i, err)
			}
		}
		_, _, err := e.Add(ctx, "prj_pro", "one-more.example.com")
		wantCode(t, err, petstore.CodeInvalidRequest)
		if msg := petstore.ErrorMessage(err); !strings.Contains(msg, "50 custom domains") || !strings.Contains(msg, "remove one") {
			t.Fatalf("message %q", msg)
		}
		if _, created, err := e.Add(ctx, "prj_pro", "s7.example.com"); err != nil || created {
			t.Fatalf("re-adding a held name at the cap: created %v, %v", created, err)
		}
		// Another project is not affected.
		if _, _, err := e.Add(ctx, "prj_business", "other.example.com"); err != nil {
			t.Fatal(err)
		}
		if err := e.Remove(ctx, "prj_pro", "s3.example.com"); err != nil {
			t.Fatal(err)
		}
		if _, created, err := e.Add(ctx, "prj_pro", "one-more.example.com"); err != nil || !created {
			t.Fatalf("after a removal: created %v, %v", created, err)
		}
	})
	t.Run("concurrent adds stop at the cap", func(t *testing.T) {
		e := newEngine(t, 5)
		var wg sync.WaitGroup
		var mu sync.Mutex
		added := 0
		for i := range 20 {
			wg.Go(func() {
				_, created, err := e.Add(ctx, "prj_pro", fmt.Sprintf("c%d.example.com", i))
				if err != nil && petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
					t.Errorf("add %d: %v", i, err)
				}
				if created {
					mu.Lock()
					added++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if list, err := e.List(ctx, "prj_pro"); err != nil || len(list) != 5 || added != 5 {
			t.Fatalf("%d created, %d listed (%v); want 5", added, len(list), err)
		}
	})
	t.Run("negative means no cap", func(t *testing.T) {
		e := newEngine(t, -1)
		for i := range 60 {
			if _, _, err := e.Add(ctx, "prj_pro", fmt.Sprintf("n%d.example.com", i)); err != nil {
				t.Fatalf("domain %d: %v", i, err)
			}
		}
	})
}

// racingStore is a real memstore on which, once armed, another writer
// updates the domain between the engine's read and its write: the
// engine's write then loses (conflict), as it would against another
// process sharing the database.
type racingStore struct {
	*memstore.Store
	armed atomic.Bool
	pass  atomic.Int32 // armed: updates to let through before the race
}

func (s *racingStore) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if s.armed.Load() && s.pass.Add(-1) >= 0 {
		return s.Store.UpdateDomain(ctx, e)
	}
	if s.armed.CompareAndSwap(true, false) {
		if cur, err := s.Store.DomainByName(ctx, e.Name); err == nil {
			cur.UpdatedAt = cur.UpdatedAt.Add(time.Second)
			if _, err := s.Store.UpdateDomain(ctx, cur); err != nil {
				return customdomain.Entry{}, err
			}
		}
	}
	return s.Store.UpdateDomain(ctx, e)
}

// TestLostWriteRequestsNoCertificate: a Verify whose first write loses a
// race reads the domain again and writes once more; the certificate is
// requested once, after the write that won, never for the lost one.
func TestLostWriteRequestsNoCertificate(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	store := &racingStore{Store: memstore.New()}
	w := domaintest.New(t, domaintest.Options{Store: store, Projects: projects, CertIssuer: certs})
	e := w.Engine
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := e.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	store.armed.Store(true)
	d, err := e.Verify(ctx, "prj_pro", "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if store.armed.Load() {
		t.Fatal("the race was never run: the test proves nothing")
	}
	certs.mu.Lock()
	requests := slices.Clone(certs.requests)
	certs.mu.Unlock()
	if d.Status != customdomain.StatusIssuing || len(requests) != 1 {
		t.Fatalf("after a lost write: %s with %d certificate requests %v; want issuing with exactly one", d.Status, len(requests), requests)
	}
}

// TestLostBackgroundWriteRequestsNoCertificate: the background check asks
// an issuer that knows nothing of an issuing domain (it restarted) for the
// certificate again only once its write won; a lost write requests
// nothing, and the next check does.
func TestLostBackgroundWriteRequestsNoCertificate(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	store := &racingStore{Store: memstore.New()}
	w := domaintest.New(t, domaintest.Options{Store: store, Projects: projects, CertIssuer: certs})
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("Verify = %s, %v; want issuing", d.Status, err)
	}
	requests := func() int {
		certs.mu.Lock()
		defer certs.mu.Unlock()
		delete(certs.state, "shop.example.com") // the issuer restarted: it knows nothing
		return len(certs.requests)
	}
	if n := requests(); n != 1 {
		t.Fatalf("%d requests after Verify, want 1", n)
	}

	w.Clock.Advance(2 * time.Minute)
	store.pass.Store(0) // the check's one write loses
	store.armed.Store(true)
	if _, err := w.Engine.RunDue(ctx, w.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if store.armed.Load() {
		t.Fatal("the race was never run: the test proves nothing")
	}
	if n := requests(); n != 1 {
		t.Fatalf("%d requests after a background check whose write lost, want still 1", n)
	}

	w.Clock.Advance(3 * time.Minute)
	if _, err := w.Engine.RunDue(ctx, w.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := requests(); n != 2 {
		t.Fatalf("%d requests after a background check whose write won, want 2", n)
	}
}

// TestCertificateObtainedElsewhereAfterARefusal: processes share the
// store and the certificates, but each knows only its own orders. When
// the customer fixed the CAA records and Re-verify reached another
// process, the first one's background check still sees its own refusal
// and fails the domain again; once the other process has the
// certificate, the domain must go live, within a minute (its records are
// checked first), not stay failed.
func TestCertificateObtainedElsewhereAfterARefusal(t *testing.T) {
	ctx := context.Background()
	first := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, first)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_pro", "shop.example.com")
	f.verify(t, "prj_pro", "shop.example.com")
	first.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertFailed, Reason: "CAA records forbid the CA"})
	if err := f.engine.CertificateChanged(ctx, "shop.example.com"); err != nil {
		t.Fatal(err)
	}

	second := &issuer{state: map[string]customdomain.CertStatus{}}
	other := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = second })
	if d, err := other.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("Re-verify on the other process: %s, %v; want issuing", d.Status, err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.engine.RunDue(ctx, f.clock.Now()); err != nil { // the first process's stale refusal
		t.Fatal(err)
	}
	second.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertIssued})
	if err := other.CertificateChanged(ctx, "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	// Its records are checked within a minute, and still verify.
	f.clock.Advance(time.Minute)
	if _, err := other.RunDue(ctx, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	d, err := other.Get(ctx, "prj_pro", "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusActive || other.Route("shop.example.com").Kind != customdomain.RouteServe {
		t.Fatalf("certificate issued by the other process: %s (%q), route %+v; want active and served",
			d.Status, d.Reason, other.Route("shop.example.com"))
	}
}
