package customdomain_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

// certStorage is the certificate layer's shared storage (the database,
// with adapters/acme), which every replica's issuer reads and writes:
// while down is set a removal cannot reach it. removals counts the
// removals that did.
type certStorage struct {
	*issuer
	mu       sync.Mutex
	down     bool
	removals map[string]int
}

func newCertStorage() *certStorage {
	return &certStorage{issuer: &issuer{state: map[string]customdomain.CertStatus{}, stored: true}, removals: map[string]int{}}
}

func (s *certStorage) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *certStorage) removed(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removals[name]
}

func (s *certStorage) Remove(ctx context.Context, name string) error {
	s.mu.Lock()
	down := s.down
	if !down {
		s.removals[name]++
	}
	s.mu.Unlock()
	if down {
		return errors.New("certificate storage unreachable")
	}
	return s.issuer.Remove(ctx, name)
}

// removedWhileCertStorageDown gives f a live shop.example.com of prj_pro,
// with its certificate in certs, removed by an engine of its own while
// the storage was down; the storage is up again, and that engine is gone
// (the process ended), so only the store remembers the removal. The
// certificate counts no removal yet.
func removedWhileCertStorageDown(t *testing.T, f *fixture, certs *certStorage) {
	t.Helper()
	ctx := context.Background()
	e := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })
	f.set(t, "example.com.", cname("shop", target))
	if _, _, err := e.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := e.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive || d.Certificate.State != customdomain.CertIssued {
		t.Fatalf("Verify = %s with certificate %s (%v), want active with one issued", d.Status, d.Certificate.State, err)
	}
	certs.setDown(true)
	if err := e.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatalf("Remove with the certificate storage down = %v, want nil: the domain is removed", err)
	}
	certs.setDown(false)
	if n := certs.removed("shop.example.com"); n != 0 {
		t.Fatalf("the certificate was removed %d times although the storage was down", n)
	}
}

// TestPendingCertRemovalSurvivesRestart: a certificate whose removal
// failed as its domain was removed is removed later by the background
// loop of another process on the same store, after the one that removed
// the domain ended: the pending removal is kept with the removed domain,
// not in the memory of that process. Before, a restart left the
// certificate and its private key in storage for a name the platform no
// longer serves.
func TestPendingCertRemovalSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	certs := newCertStorage()
	f := newFixture(t, nil)
	removedWhileCertStorageDown(t, f, certs)
	restarted := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })
	for range 3 {
		if _, err := restarted.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n := certs.removed("shop.example.com"); n != 1 {
		t.Fatalf("after a restart and the background retries the certificate was removed %d times, want 1", n)
	}
	if st, _ := certs.Status(ctx, "shop.example.com"); st.State != customdomain.CertNone {
		t.Fatalf("after the background retries the certificate storage still has shop.example.com: %s", st.State)
	}
}

// meetingStore is a store as one of several replicas sees it: its first
// DueDomains call answers only once every replica's first call has read,
// so that they all find the same due entries before any acts on them.
type meetingStore struct {
	customdomain.Store
	meet *meeting
}

func (s meetingStore) DueDomains(ctx context.Context, now time.Time, limit int) ([]customdomain.Entry, error) {
	due, err := s.Store.DueDomains(ctx, now, limit)
	s.meet.arrive()
	return due, err
}

// meeting lets n callers of arrive through together, then everyone at once.
type meeting struct {
	mu      sync.Mutex
	waiting int
	all     chan struct{}
}

func newMeeting(n int) *meeting { return &meeting{waiting: n, all: make(chan struct{})} }

func (m *meeting) arrive() {
	m.mu.Lock()
	if m.waiting--; m.waiting == 0 {
		close(m.all)
	}
	m.mu.Unlock()
	<-m.all
}

// TestPendingCertRemovalOnceAcrossReplicas: replicas running the
// background loop at the same time, both finding the removal due, remove
// the certificate once between them, and not again later.
func TestPendingCertRemovalOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	certs := newCertStorage()
	f := newFixture(t, nil)
	removedWhileCertStorageDown(t, f, certs)
	meet := newMeeting(2)
	replica := func(c *customdomain.EngineConfig) {
		c.CertIssuer = certs
		c.Store = meetingStore{Store: c.Store, meet: meet}
	}
	replicas := []*customdomain.Engine{f.replica(t, replica), f.replica(t, replica)}
	for range 3 {
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
	}
	if n := certs.removed("shop.example.com"); n != 1 {
		t.Fatalf("two replicas' background loops removed the certificate %d times, want 1", n)
	}
}

// TestPendingCertRemovalOfAReattachedName: a name added again while its
// old certificate's removal is pending keeps the certificate, whichever
// project adds it: the certificate is the platform's, for the name, and
// the new domain uses it once it verifies. The new domain's own removal
// removes it.
func TestPendingCertRemovalOfAReattachedName(t *testing.T) {
	for _, project := range []string{"prj_pro", "prj_business"} {
		t.Run(project, func(t *testing.T) {
			ctx := context.Background()
			certs := newCertStorage()
			f := newFixture(t, nil)
			removedWhileCertStorageDown(t, f, certs)
			other := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })
			if _, _, err := other.Add(ctx, project, "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := other.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if n := certs.removed("shop.example.com"); n != 0 {
				t.Fatalf("the certificate of a name attached again was removed %d times, want 0", n)
			}
			// Another project must prove it controls the name first; until
			// it does, the certificate left behind is not its own.
			d, err := other.Get(ctx, project, "shop.example.com")
			if err != nil {
				t.Fatal(err)
			}
			if project == "prj_business" && (d.Status != customdomain.StatusPending || other.Admits("shop.example.com")) {
				t.Fatalf("another project's unproven domain: %s, handshakes answered %v; want pending and not answered", d.Status, other.Admits("shop.example.com"))
			}
			if err := other.Remove(ctx, project, "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := other.RunDue(ctx, f.clock.Advance(30*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if n := certs.removed("shop.example.com"); n != 1 {
				t.Fatalf("once the new domain is removed too the certificate was removed %d times, want 1", n)
			}
		})
	}
}

// stores are the real stores the replica tests run on: a memory store
// and the bun store on SQLite.
var stores = []struct {
	name string
	open func(t *testing.T) customdomain.Store
}{
	{"memstore", func(*testing.T) customdomain.Store { return memstore.New() }},
	{"SQLite", func(t *testing.T) customdomain.Store { return bunstore.New(migratedSQLite(t)) }},
}

// removedEntry returns prj_pro's removed shop.example.com as stored.
func removedEntry(t *testing.T, s customdomain.Store) customdomain.Entry {
	t.Helper()
	removed, err := s.ListDomains(context.Background(), customdomain.DomainQuery{ProjectID: "prj_pro", Name: "shop.example.com", Status: customdomain.StatusRemoved})
	if err != nil || len(removed) != 1 {
		t.Fatalf("removed entries of shop.example.com: %d (%v), want 1", len(removed), err)
	}
	return removed[0]
}

// TestPendingCertRemovalAcrossMixedReplicas: replicas of mixed
// configuration share a store, one with a CertIssuer and one without. At a
// pending certificate removal's due time the replica without one leaves
// the entry as it is (it cannot remove the certificate, so it neither
// claims the attempt nor moves its next try away from the replicas that
// can), and the one with a CertIssuer, running at that time too, removes
// the certificate on its first try. Records at the DNS provider still
// pending are deleted by whichever replica comes first, once. Before, the
// replica without a CertIssuer claimed the attempt every recheck interval
// for ever, and the one with it found nothing due.
func TestPendingCertRemovalAcrossMixedReplicas(t *testing.T) {
	for _, s := range stores {
		for _, withRecords := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/records=%v", s.name, withRecords), func(t *testing.T) {
				ctx := context.Background()
				store := s.open(t)
				f := newFixtureOn(t, store, nil)
				certs := newCertStorage()
				zone := memzone.New()
				zone.AddZone("example.com.")
				dns := &switchable{DNSConfigurator: dnsconfig.New(zone)}
				withDNS := func(c *customdomain.EngineConfig) {
					c.DNS = func(string) customdomain.DNSConfigurator { return dns }
				}
				remover := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs; withDNS(c) })
				f.set(t, "example.com.", cname("shop", target))
				if _, _, err := remover.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
					t.Fatal(err)
				}
				if d, err := remover.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Certificate.State != customdomain.CertIssued {
					t.Fatalf("Verify = %s with certificate %s (%v), want one issued", d.Status, d.Certificate.State, err)
				}
				if withRecords {
					if findings, err := remover.ConfigureDNS(ctx, "prj_pro", "shop.example.com"); err != nil || len(findings) != 0 {
						t.Fatalf("ConfigureDNS = %+v, %v; want no findings", findings, err)
					}
					dns.setDown(true)
				}
				certs.setDown(true)
				if err := remover.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
					t.Fatal(err)
				}
				certs.setDown(false)
				dns.setDown(false)
				pending := removedEntry(t, store)
				if !pending.CertRemovalPending || pending.NextCheckAt.IsZero() || withRecords != (len(pending.DNSRecords) > 0) {
					t.Fatalf("removed entry: certificate removal pending %v, records %v, next try %s: the test proves nothing", pending.CertRemovalPending, pending.DNSRecords, pending.NextCheckAt)
				}

				due := pending.NextCheckAt
				noIssuer := f.replica(t, withDNS)
				withIssuer := f.replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = certs; withDNS(c) })
				f.clock.Set(due)
				for range 3 { // every round of the replica without a CertIssuer
					if _, err := noIssuer.RunDue(ctx, due); err != nil {
						t.Fatal(err)
					}
				}
				after := removedEntry(t, store)
				if !after.NextCheckAt.Equal(due) || !after.CertRemovalPending {
					t.Fatalf("after the replica without a CertIssuer ran: next try %s, certificate removal pending %v; want it due at %s still, pending", after.NextCheckAt, after.CertRemovalPending, due)
				}
				if !withRecords && after.Version != pending.Version {
					t.Fatalf("the replica without a CertIssuer wrote the entry (version %d, was %d) though it can do nothing for it", after.Version, pending.Version)
				}
				if withRecords {
					if got := recordsAt(t, zone, "example.com.", "shop"); len(got) != 0 || len(after.DNSRecords) != 0 {
						t.Fatalf("after the replica without a CertIssuer ran, the zone has at shop %q and %d records pending; want them deleted", got, len(after.DNSRecords))
					}
				}

				if _, err := withIssuer.RunDue(ctx, due); err != nil {
					t.Fatal(err)
				}
				if n := certs.removed("shop.example.com"); n != 1 {
					t.Fatalf("the replica with a CertIssuer, at the removal's due time, removed the certificate %d times, want 1", n)
				}
				if en := removedEntry(t, store); en.CertRemovalPending || !en.NextCheckAt.IsZero() {
					t.Fatalf("once removed: certificate removal pending %v, next try %s; want nothing pending", en.CertRemovalPending, en.NextCheckAt)
				}
				if withRecords && dns.deletions() != 1 {
					t.Fatalf("%d deletions reached the provider, want 1", dns.deletions())
				}
			})
		}
	}
}
