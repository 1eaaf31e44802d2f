package customdomain_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// recordsAt lists "TYPE data" of the records at name in zone, sorted.
func recordsAt(t *testing.T, p dnsconfig.Provider, zone, name string) []string {
	t.Helper()
	recs, err := p.GetRecords(context.Background(), zone)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		if rr := r.RR(); rr.Name == name && rr.Type != "NS" {
			out = append(out, rr.Type+" "+rr.Data)
		}
	}
	slices.Sort(out)
	return out
}

// TestRemoveDeletesOnlyWhatConfigureDNSWrote: removing a domain deletes the
// records "Configure DNS for me" wrote, and never a record that was in the
// zone before (which ConfigureDNS found right and left alone), nor one the
// customer changed since it was written.
func TestRemoveDeletesOnlyWhatConfigureDNSWrote(t *testing.T) {
	cname := func(target string) libdns.Record {
		return libdns.CNAME{Name: "shop", TTL: time.Hour, Target: target}
	}
	for _, b := range rfc2136test.Backends(t, "example.com.", "example.org.") {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range []struct {
				name, domain, zone, at string
				before                 []libdns.Record // in the zone before ConfigureDNS
				configureTwice         bool
				after                  []libdns.Record // the customer's change after ConfigureDNS
				want                   []string        // at `at` after Remove
			}{
				{name: "written", domain: "shop.example.com", zone: "example.com.", at: "shop",
					want: []string{}},
				{name: "written, configured again", domain: "shop.example.com", zone: "example.com.", at: "shop",
					configureTwice: true, want: []string{}},
				{name: "there before", domain: "shop.example.com", zone: "example.com.", at: "shop",
					before: []libdns.Record{cname(target + ".")},
					want:   []string{"CNAME " + target + "."}},
				{name: "changed by the customer", domain: "shop.example.com", zone: "example.com.", at: "shop",
					after: []libdns.Record{cname("elsewhere.example.net.")},
					want:  []string{"CNAME elsewhere.example.net."}},
				{name: "apex, one address there before", domain: "example.org", zone: "example.org.", at: "@",
					before: []libdns.Record{libdns.Address{Name: "@", TTL: time.Hour, IP: netip.MustParseAddr("127.0.0.1")}},
					want:   []string{"A 127.0.0.1"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					f := newFixture(t, nil)
					withDNS := func(c *customdomain.EngineConfig) {
						c.DNS = func(string) customdomain.DNSConfigurator { return dnsconfig.New(b.Provider) }
					}
					// One process configures, another removes: what was
					// written is in the store, not in a process.
					e, other := f.replica(t, withDNS), f.replica(t, withDNS)
					t.Cleanup(func() { // the zones are shared by the cases
						recs, _ := b.Provider.GetRecords(ctx, tc.zone)
						recs = slices.DeleteFunc(recs, func(r libdns.Record) bool { return r.RR().Name != tc.at || r.RR().Type == "NS" })
						if len(recs) > 0 {
							if _, err := b.Provider.DeleteRecords(ctx, tc.zone, recs); err != nil {
								t.Error(err)
							}
						}
					})
					if len(tc.before) > 0 {
						if _, err := b.Provider.AppendRecords(ctx, tc.zone, tc.before); err != nil {
							t.Fatal(err)
						}
					}
					if _, _, err := e.Add(ctx, "prj_pro", tc.domain); err != nil {
						t.Fatal(err)
					}
					for range map[bool]int{false: 1, true: 2}[tc.configureTwice] {
						if findings, err := e.ConfigureDNS(ctx, "prj_pro", tc.domain); err != nil || len(findings) != 0 {
							t.Fatalf("ConfigureDNS = %+v, %v; want no findings", findings, err)
						}
					}
					if len(tc.after) > 0 {
						// The customer edits the record: delete it, write the new one.
						if _, err := b.Provider.DeleteRecords(ctx, tc.zone, []libdns.Record{libdns.RR{Name: tc.at, Type: tc.after[0].RR().Type}}); err != nil {
							t.Fatal(err)
						}
						if _, err := b.Provider.AppendRecords(ctx, tc.zone, tc.after); err != nil {
							t.Fatal(err)
						}
					}
					if err := other.Remove(ctx, "prj_pro", tc.domain); err != nil {
						t.Fatal(err)
					}
					if got := recordsAt(t, b.Provider, tc.zone, tc.at); !slices.Equal(got, tc.want) {
						t.Fatalf("after Remove the zone has at %s %q, want %q", tc.at, got, tc.want)
					}
				})
			}
		})
	}
}

// removing is a configurator whose domain is removed by another request
// right after its records are written, before ConfigureDNS stores them.
type removing struct {
	customdomain.DNSConfigurator
	remove func()
}

func (r *removing) Configure(ctx context.Context, zone string, records []customdomain.Record) ([]customdomain.Record, []customdomain.Finding, error) {
	created, findings, err := r.DNSConfigurator.Configure(ctx, zone, records)
	r.remove()
	return created, findings, err
}

// TestConfigureDNSRacingRemove: a domain removed while ConfigureDNS writes
// its records does not leave them behind: the removal could not know them,
// so ConfigureDNS deletes them and says the domain is gone.
func TestConfigureDNSRacingRemove(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	zone := memzone.New()
	zone.AddZone("example.com.")
	var e *customdomain.Engine
	e = f.replica(t, func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator {
			return &removing{DNSConfigurator: dnsconfig.New(zone), remove: func() {
				if err := e.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
					t.Error(err)
				}
			}}
		}
	})
	if _, _, err := e.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	_, err := e.ConfigureDNS(ctx, "prj_pro", "shop.example.com")
	wantCode(t, err, petstore.CodeNotFound)
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after ConfigureDNS of a removed domain the zone has at shop %q, want nothing", got)
	}
}

// TestRemoveRetriesDNSRecords: records "Configure DNS for me" wrote that
// cannot be deleted when the domain is removed (the provider is down) are
// deleted by the background loop later, so no CNAME is left pointing at
// the platform. TestPendingDNSRecordsOfAReattachedName covers a name
// attached again meanwhile.
func TestRemoveRetriesDNSRecords(t *testing.T) {
	f := newFixture(t, nil)
	e, _, zone, _ := removedWhileDNSDown(t, f)
	for range 2 {
		if _, err := e.RunDue(context.Background(), f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after the background retries the zone has at shop %q, want nothing", got)
	}
}

// removedWhileDNSDown gives f an engine whose DNS provider (a memzone
// holding example.com, behind dns) was down while prj_pro's
// shop.example.com, configured through it, was removed, and is up again:
// the records wait for the background loop. withDNS configures more
// replicas with the same provider.
func removedWhileDNSDown(t *testing.T, f *fixture) (e *customdomain.Engine, dns *switchable, zone *memzone.Provider, withDNS func(*customdomain.EngineConfig)) {
	t.Helper()
	zone = memzone.New()
	zone.AddZone("example.com.")
	dns = &switchable{DNSConfigurator: dnsconfig.New(zone)}
	withDNS = func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator { return dns }
	}
	e = f.replica(t, withDNS)
	configuredThenRemoved(t, e, dns, zone, "prj_pro")
	dns.setDown(false)
	return e, dns, zone, withDNS
}

// switchable is a configurator whose DNS provider is down while down is
// set, and which counts the deletions that reached the provider.
type switchable struct {
	customdomain.DNSConfigurator
	mu      sync.Mutex
	down    bool
	deleted int
}

func (s *switchable) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *switchable) deletions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleted
}

func (s *switchable) Unconfigure(ctx context.Context, zone string, records []customdomain.Record) error {
	s.mu.Lock()
	down := s.down
	if !down {
		s.deleted++
	}
	s.mu.Unlock()
	if down {
		return errors.New("dns provider unreachable")
	}
	return s.DNSConfigurator.Unconfigure(ctx, zone, records)
}

// configuredThenRemoved adds shop.example.com to project, writes its
// records through dns with e, and removes it while dns is down: the
// records stay in the zone, pending deletion.
func configuredThenRemoved(t *testing.T, e *customdomain.Engine, dns *switchable, zone dnsconfig.Provider, project string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := e.Add(ctx, project, "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if findings, err := e.ConfigureDNS(ctx, project, "shop.example.com"); err != nil || len(findings) != 0 {
		t.Fatalf("ConfigureDNS = %+v, %v; want no findings", findings, err)
	}
	dns.setDown(true)
	if err := e.Remove(ctx, project, "shop.example.com"); err != nil {
		t.Fatalf("Remove with the DNS provider down = %v, want nil: the domain is removed", err)
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) == 0 {
		t.Fatal("the records were deleted although the provider was down")
	}
}

// TestPendingDNSDeletionSurvivesRestart: a deletion that failed at removal
// is kept in the store, not in the memory of the process that removed the
// domain: after a restart (a new engine over the same store) the
// background loop deletes the records. It deletes them once: a record the
// customer writes again by hand afterwards stays, whichever replica runs
// the loop.
func TestPendingDNSDeletionSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	zone := memzone.New()
	zone.AddZone("example.com.")
	before := &switchable{DNSConfigurator: dnsconfig.New(zone)}
	e := f.replica(t, func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator { return before }
	})
	configuredThenRemoved(t, e, before, zone, "prj_pro")

	// The process restarts, and the provider is back.
	after := &switchable{DNSConfigurator: dnsconfig.New(zone)}
	restarted := f.replica(t, func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator { return after }
	})
	for range 2 {
		if _, err := restarted.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after a restart and the background retries the zone has at shop %q, want nothing", got)
	}

	// The customer writes the CNAME again by hand; the old process (its
	// provider back too) and the new one go on running the loop.
	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: target + "."}}); err != nil {
		t.Fatal(err)
	}
	before.setDown(false)
	for range 3 {
		now := f.clock.Advance(30 * time.Minute)
		for _, r := range []*customdomain.Engine{e, restarted} {
			if _, err := r.RunDue(ctx, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); !slices.Equal(got, []string{"CNAME " + target + "."}) {
		t.Fatalf("the customer's own CNAME, written after the deletion, became %q: deleted again", got)
	}
	if n := before.deletions() + after.deletions(); n != 1 {
		t.Fatalf("%d deletions reached the provider, want 1", n)
	}
}

// TestPendingDNSDeletionOnceAcrossReplicas: replicas running the
// background loop at the same time delete a removed domain's records
// once between them.
func TestPendingDNSDeletionOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	e, dns, zone, withDNS := removedWhileDNSDown(t, f)
	replicas := []*customdomain.Engine{e, f.replica(t, withDNS), f.replica(t, withDNS)}
	now := f.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() {
			if _, err := r.RunDue(ctx, now); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after the background retries the zone has at shop %q, want nothing", got)
	}
	if n := dns.deletions(); n != 1 {
		t.Fatalf("%d deletions reached the provider, want 1", n)
	}
}

// TestPendingDNSRecordsOfAReattachedName: records whose deletion is still
// pending when the name is attached again are not forgotten. The same
// project's new domain takes them over, so its own removal deletes them;
// another project's leaves them with the removed domain, which deletes
// them once the name is free again.
func TestPendingDNSRecordsOfAReattachedName(t *testing.T) {
	for _, project := range []string{"prj_pro", "prj_business"} {
		t.Run(project, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, nil)
			e, _, zone, _ := removedWhileDNSDown(t, f)
			if _, _, err := e.Add(ctx, project, "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := e.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"CNAME " + target + "."}
			if got := recordsAt(t, zone, "example.com.", "shop"); !slices.Equal(got, want) {
				t.Fatalf("while the name is attached again the zone has at shop %q, want %q", got, want)
			}
			if err := e.Remove(ctx, project, "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := e.RunDue(ctx, f.clock.Advance(30*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
				t.Fatalf("once the name is removed again the zone has at shop %q, want nothing", got)
			}
		})
	}
}

// domainRows counts the rows of domains the database sends back to bun's
// SELECTs: what an operator sees of the store's reads in the database's
// statistics, or in bun's own query log and traces.
type domainRows struct{ n atomic.Int64 }

func (*domainRows) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (c *domainRows) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if ev.Operation() != "SELECT" || !strings.Contains(ev.Query, `FROM "domains"`) || ev.Result == nil {
		return
	}
	if n, err := ev.Result.RowsAffected(); err == nil {
		c.n.Add(n)
	}
}

// TestPendingDNSDeletionsReadOnlyWhenDue: the background loop finds the
// removed domains whose records are still to be deleted among its due
// domains, and reads no other removed domain. Removed domains are kept
// for good (they say who held a name last), so a loop that reads them all
// to find the few pending reads more rows every minute, on every replica,
// for as long as the platform lives.
func TestPendingDNSDeletionsReadOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	db := migratedSQLite(t)
	rows := &domainRows{}
	zone := memzone.New()
	zone.AddZone("example.com.")
	dns := &switchable{DNSConfigurator: dnsconfig.New(zone)}
	w := domaintest.New(t, domaintest.Options{
		Store: bunstore.New(db.WithQueryHook(rows)), Projects: projects, Start: start,
		Config: func(c *customdomain.EngineConfig) {
			c.CNAMETarget = target + "."
			c.EdgeIPs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			c.MaxDomainsPerProject = -1
			c.DNS = func(string) customdomain.DNSConfigurator { return dns }
		},
	})
	const removed = 50
	for i := range removed {
		name := fmt.Sprintf("old%d.example.com", i)
		if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
			t.Fatal(err)
		}
		if err := w.Engine.Remove(ctx, "prj_pro", name); err != nil {
			t.Fatal(err)
		}
	}
	configuredThenRemoved(t, w.Engine, dns, zone, "prj_pro")
	dns.setDown(false)

	rows.n.Store(0)
	if _, err := w.Engine.RunDue(ctx, w.Clock.Advance(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after the background retry the zone has at shop %q, want nothing", got)
	}
	if n := rows.n.Load(); n > 5 {
		t.Fatalf("the background pass that deleted one domain's records read %d rows of domains, with %d other removed domains stored; want only the due one's: at most 5", n, removed)
	}
	rows.n.Store(0)
	if _, err := w.Engine.RunDue(ctx, w.Clock.Advance(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := rows.n.Load(); n != 0 {
		t.Fatalf("a background pass with nothing due read %d rows of domains, with %d removed domains stored; want none", n, removed+1)
	}
}

// claimingStore is a real memstore on which, once armed, another
// replica's background loop claims the retry of a released domain's
// pending DNS deletion (it moves the entry's NextCheckAt on, a
// version-checked write) just before the engine's next write of a
// removed entry, the dismissal of that released domain.
type claimingStore struct {
	*memstore.Store
	armed atomic.Bool
}

func (s *claimingStore) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if e.Status == customdomain.StatusRemoved && s.armed.CompareAndSwap(true, false) {
		released, err := s.Store.ListDomains(ctx, customdomain.DomainQuery{ProjectID: e.ProjectID, Name: e.Name, Status: customdomain.StatusReleased})
		if err != nil || len(released) != 1 {
			return customdomain.Entry{}, fmt.Errorf("the released entry to claim: %v, %v", released, err)
		}
		claim := released[0]
		claim.NextCheckAt = claim.NextCheckAt.Add(time.Minute)
		if _, err := s.Store.UpdateDomain(ctx, claim); err != nil {
			return customdomain.Entry{}, err
		}
	}
	return s.Store.UpdateDomain(ctx, e)
}

// TestAddDismissesReleasedDomainWhileItsDeletionIsRetried: adding a name
// again dismisses the project's released domain of it, also when another
// replica writes that entry meanwhile to retry the deletion of its DNS
// records: the project sees one domain of the name, the new one.
func TestAddDismissesReleasedDomainWhileItsDeletionIsRetried(t *testing.T) {
	ctx := context.Background()
	store := &claimingStore{Store: memstore.New()}
	w := domaintest.New(t, domaintest.Options{Store: store, Projects: projects})
	const name = "shop.example.com"
	now := w.Clock.Now()
	// As a release whose deletion of the records failed leaves it.
	if _, err := store.CreateDomain(ctx, customdomain.Entry{
		ID: "dom_released", ProjectID: "prj_pro", Name: name,
		Status: customdomain.StatusReleased, Reason: "released",
		History:     []customdomain.Transition{{Status: customdomain.StatusReleased, At: now, Reason: "released"}},
		DNSRecords:  []customdomain.Record{{Type: "CNAME", Name: "shop", Value: target + "."}},
		NextCheckAt: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now,
	}); err != nil {
		t.Fatal(err)
	}
	store.armed.Store(true)
	if _, created, err := w.Engine.Add(ctx, "prj_pro", name); err != nil || !created {
		t.Fatalf("Add = %v, %v; want created", created, err)
	}
	if store.armed.Load() {
		t.Fatal("the race was never run: the test proves nothing")
	}
	list, err := w.Engine.List(ctx, "prj_pro")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range list {
		got = append(got, d.Name+" "+string(d.Status))
	}
	if want := []string{name + " pending"}; !slices.Equal(got, want) {
		t.Fatalf("after adding the name again the project lists %q, want %q: the released domain was not dismissed", got, want)
	}
}

// reAdding is a certificate layer during whose removal of a certificate
// (the step of a removal just before the deletion of its DNS records)
// the name is added again, once, by another request.
type reAdding struct {
	*issuer
	before atomic.Pointer[func()]
}

func (r *reAdding) Remove(ctx context.Context, name string) error {
	if f := r.before.Swap(nil); f != nil {
		(*f)()
	}
	return r.issuer.Remove(ctx, name)
}

// TestRemoveRacingReAddKeepsTheNewDomainsRecords: a name the same project
// adds again, and configures, while its removal is still under way keeps
// the records its new domain relies on: ConfigureDNS found them in the
// zone, right, and left them, so the removal must not delete them from
// under it. The new domain takes them over, and its own removal deletes
// them.
func TestRemoveRacingReAddKeepsTheNewDomainsRecords(t *testing.T) {
	ctx := context.Background()
	certs := &reAdding{issuer: &issuer{state: map[string]customdomain.CertStatus{}}}
	f := newFixture(t, nil)
	zone := memzone.New()
	zone.AddZone("example.com.")
	e := f.replica(t, func(c *customdomain.EngineConfig) {
		c.CertIssuer = certs
		c.DNS = func(string) customdomain.DNSConfigurator { return dnsconfig.New(zone) }
	})
	const name = "shop.example.com"
	configure := func() {
		if _, _, err := e.Add(ctx, "prj_pro", name); err != nil {
			t.Error(err)
		}
		if findings, err := e.ConfigureDNS(ctx, "prj_pro", name); err != nil || len(findings) != 0 {
			t.Errorf("ConfigureDNS = %+v, %v; want no findings", findings, err)
		}
	}
	configure()
	want := []string{"CNAME " + target + "."}
	if got := recordsAt(t, zone, "example.com.", "shop"); !slices.Equal(got, want) {
		t.Fatalf("after ConfigureDNS the zone has at shop %q, want %q", got, want)
	}
	certs.before.Store(&configure)
	if err := e.Remove(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if certs.before.Load() != nil {
		t.Fatal("the race was never run: the test proves nothing")
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); !slices.Equal(got, want) {
		t.Fatalf("after a removal raced by the name's new domain the zone has at shop %q, want %q", got, want)
	}
	for range 2 {
		if _, err := e.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Remove(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 {
		t.Fatalf("after the new domain's removal the zone has at shop %q, want nothing", got)
	}
}

// TestPendingDNSDeletionAcrossMixedReplicas: a replica with no DNS
// providers configured shares the store with one that has them. At a
// pending deletion's due time it leaves the removed entry as it is (it can
// neither delete the records nor should it drop them), and the replica
// with the providers deletes them on its first try. Before, the replica
// without them took the records for deleted ("the project has no
// provider now") and forgot them, leaving them in the zone for ever.
func TestPendingDNSDeletionAcrossMixedReplicas(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			store := s.open(t)
			f := newFixtureOn(t, store, nil)
			_, dns, zone, withDNS := removedWhileDNSDown(t, f)
			pending := removedEntry(t, store)
			if len(pending.DNSRecords) == 0 || pending.NextCheckAt.IsZero() {
				t.Fatalf("removed entry: records %v, next try %s: the test proves nothing", pending.DNSRecords, pending.NextCheckAt)
			}
			due := pending.NextCheckAt
			f.clock.Set(due)
			noDNS := f.replica(t, nil)
			for range 3 {
				if _, err := noDNS.RunDue(ctx, due); err != nil {
					t.Fatal(err)
				}
			}
			if after := removedEntry(t, store); after.Version != pending.Version {
				t.Fatalf("the replica without DNS providers wrote the entry (version %d, was %d; records %v, next try %s)", after.Version, pending.Version, after.DNSRecords, after.NextCheckAt)
			}
			if _, err := f.replica(t, withDNS).RunDue(ctx, due); err != nil {
				t.Fatal(err)
			}
			if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 || dns.deletions() != 1 {
				t.Fatalf("after the replica with the providers ran at the due time the zone has at shop %q (%d deletions); want nothing, deleted once", got, dns.deletions())
			}
		})
	}
}

// migratedSQLite is a bun store's database in SQLite memory, migrated,
// closed when the test ends.
func migratedSQLite(t *testing.T) *bun.DB {
	t.Helper()
	ctx := context.Background()
	db, err := bunopen.Open(ctx, "memory")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestConfigureDNSWithTheProviderDownIsUnavailable: when the platform's
// DNS server cannot be reached, "Configure DNS for me" answers
// unavailable (503: try again), not an internal error, and names the zone
// without the provider's internals.
func TestConfigureDNSWithTheProviderDownIsUnavailable(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	proxy, err := faultproxy.New(k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	p := k.Provider()
	p.Server = proxy.Addr()
	f := newFixture(t, nil)
	e := f.replica(t, func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator { return dnsconfig.New(p) }
	})
	ctx := context.Background()
	if _, _, err := e.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	t.Cleanup(proxy.Restore)
	_, err = e.ConfigureDNS(ctx, "prj_pro", "shop.example.com")
	if code := petstore.ErrorCode(err); code != petstore.CodeUnavailable {
		t.Fatalf("ConfigureDNS with the DNS server down = %v (%s), want %s", err, code, petstore.CodeUnavailable)
	}
	if msg := petstore.ErrorMessage(err); !strings.Contains(msg, "example.com") || strings.Contains(msg, proxy.Addr()) {
		t.Fatalf("message %q: want the zone named, not the server's address", msg)
	}
}

// A request canceled while the DNS server does not answer (its client
// gone) is no failure of the provider: the operator's log does not say the
// provider could not be written.
func TestConfigureDNSCanceledIsNotTheProvidersFailure(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	proxy, err := faultproxy.New(k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	p := k.Provider()
	p.Server = proxy.Addr()
	var logs testenv.Buffer
	f := newFixture(t, nil)
	e := f.replica(t, func(c *customdomain.EngineConfig) {
		c.DNS = func(string) customdomain.DNSConfigurator { return dnsconfig.New(p) }
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if _, _, err := e.Add(context.Background(), "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	proxy.Pause()
	t.Cleanup(proxy.Restore)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err := e.ConfigureDNS(ctx, "prj_pro", "shop.example.com"); err == nil {
		t.Fatal("ConfigureDNS canceled while the DNS server was paused succeeded")
	}
	if strings.Contains(logs.String(), "could not be read or written") {
		t.Fatalf("a canceled request was logged as the provider's failure:\n%s", logs.String())
	}
}
