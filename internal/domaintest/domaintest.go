// Package domaintest is the module's one fixture for tests of the
// custom-domain engine and what stands on it (the dashboard, the edge, the
// certificate layer): a real DNS server on 127.0.0.1 serving the test's
// zones, a store, the shared fake clock, projects the test can change, and
// engines over them — one, or several sharing the store and the DNS server
// as the replicas of one deployment do.
package domaintest

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/testenv"
)

// Start is where a World's clock starts unless Options.Start says otherwise.
var Start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// Target is the CNAME target a World's engines give unless
// Options.Config changes it.
const Target = "edge.petstore.example"

// Projects is the platform's side of a test: each project's plan and
// whether it has deployed. Unknown projects are not_found. Safe for
// concurrent use; a test changes a plan with Set while engines read it.
type Projects struct {
	mu sync.Mutex
	m  map[string]customdomain.Project
}

// NewProjects returns Projects holding ps.
func NewProjects(ps ...customdomain.Project) *Projects {
	p := &Projects{m: map[string]customdomain.Project{}}
	p.Set(ps...)
	return p
}

// Set adds or replaces projects, by ID.
func (p *Projects) Set(ps ...customdomain.Project) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range ps {
		p.m[pr.ID] = pr
	}
}

// SetPlan changes a project's plan, keeping the rest, as an upgrade or a
// downgrade on the platform does. An unknown project is added, deployed.
func (p *Projects) SetPlan(id string, plan petstore.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.m[id]
	if !ok {
		pr = customdomain.Project{ID: id, Deployed: true}
	}
	pr.Plan = plan
	p.m[id] = pr
}

// Lookup returns the project with id, if known.
func (p *Projects) Lookup(id string) (customdomain.Project, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.m[id]
	return pr, ok
}

// Project implements customdomain.Projects.
func (p *Projects) Project(_ context.Context, id string) (customdomain.Project, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.m[id]
	if !ok {
		return customdomain.Project{}, petstore.Errorf(petstore.CodeNotFound, "project %s not found", id)
	}
	return pr, nil
}

// Options shape a World. The zero value serves example.com. and
// example.org. from a memory store, with no projects.
type Options struct {
	Zones    []string              // zones the DNS server serves; default example.com. and example.org.
	Store    customdomain.Store    // default: a new memstore
	Projects customdomain.Projects // default: an empty *Projects (World.Projects)
	Start    time.Time             // the clock's start; default Start
	// CertIssuer is World.Engine's certificate layer (nil: none). Each
	// process has its own, so replicas get theirs through Replica's edit.
	CertIssuer customdomain.CertIssuer
	// Config edits every engine's configuration, as settings a whole
	// deployment shares: its store, projects, resolver (the World's DNS
	// server), CNAME target (Target), edge addresses (127.0.0.1) and clock
	// are already set.
	Config func(*customdomain.EngineConfig)
}

// World is a DNS server, a store, a clock and an engine over them.
type World struct {
	Engine   *customdomain.Engine
	Store    customdomain.Store
	Projects customdomain.Projects
	Zone     *memzone.Provider // the records the DNS server answers with
	DNS      *memzone.Server
	Clock    *testenv.Clock
	edit     func(*customdomain.EngineConfig)
}

// New starts the World's DNS server (stopped when the test ends) and
// builds its engine.
func New(tb testing.TB, o Options) *World {
	tb.Helper()
	zones := o.Zones
	if len(zones) == 0 {
		zones = []string{"example.com.", "example.org."}
	}
	w := &World{Store: o.Store, Projects: o.Projects, Clock: testenv.NewClock(Start), edit: o.Config}
	if !o.Start.IsZero() {
		w.Clock.Set(o.Start)
	}
	if w.Store == nil {
		w.Store = memstore.New()
	}
	if w.Projects == nil {
		w.Projects = NewProjects()
	}
	w.Zone, w.DNS = memzone.NewTestServer(tb, zones...)
	w.Engine = w.Replica(tb, func(c *customdomain.EngineConfig) { c.CertIssuer = o.CertIssuer })
	return w
}

// Config is the configuration the World's engines are built from, before
// Options.Config edits it.
func (w *World) Config() customdomain.EngineConfig {
	return customdomain.EngineConfig{
		Store: w.Store, Projects: w.Projects, Resolver: dnsresolver.New(w.DNS.Addr()),
		CNAMETarget: Target, EdgeIPs: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
		Now: w.Clock.Now,
	}
}

// Replica builds another engine on the World's store, DNS server and
// clock, as another process of the deployment would be; edit, when not
// nil, changes its configuration after Options.Config did.
func (w *World) Replica(tb testing.TB, edit func(*customdomain.EngineConfig)) *customdomain.Engine {
	tb.Helper()
	cfg := w.Config()
	if w.edit != nil {
		w.edit(&cfg)
	}
	if edit != nil {
		edit(&cfg)
	}
	e, err := customdomain.New(cfg)
	if err != nil {
		tb.Fatalf("customdomain.New: %v", err)
	}
	return e
}

// Set replaces, in zone, the records of each name and type given.
func (w *World) Set(tb testing.TB, zone string, recs ...libdns.Record) {
	tb.Helper()
	if _, err := w.Zone.SetRecords(context.Background(), zone, recs); err != nil {
		tb.Fatalf("set records in %s: %v", zone, err)
	}
}
