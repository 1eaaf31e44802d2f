package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/httpx/dashboard"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// The zone the tests' customers own, the platform's CNAME target and its
// edge address. Everything resolves through a memzone DNS server on
// 127.0.0.1, never the real DNS.
const (
	Zone   = "example.com"
	Target = "edge.petstore.test"
)

var edgeIP = netip.MustParseAddr("127.0.0.1")

// DashAPI is where the dashboard's API is mounted in a World.
const DashAPI = "/dashboard/api"

// Store is what a store must offer for the whole server: pets, keys
// and domains.
type Store interface {
	petstore.Store
	customdomain.Store
}

// World is a whole platform, composed the way examples/server does: one
// store, keys that are each their own project, the domain engine reading a
// test DNS server, the dashboard, /v1 and the edge in front of them.
type World struct {
	Store  Store
	Engine *customdomain.Engine
	Zone   *memzone.Provider
	DNS    *memzone.Server
	Dash   http.Handler // the dashboard alone
	Edge   http.Handler // everything, routed by Host

	Pro, Pro2, Free, Undeployed string // key secrets
	ProKey, Pro2Key             petstore.APIKey

	Projects *domaintest.Projects
}

// SetPlan changes a project's plan, as a plan change on the platform does.
func (w *World) SetPlan(projectID string, plan petstore.Plan) {
	w.Projects.SetPlan(projectID, plan)
}

// Stores lists the stores the dashboard tests run on: the memory store
// and, once bunstore implements customdomain.Store, bunstore on SQLite.
func Stores(t *testing.T) map[string]func(t *testing.T) Store {
	out := map[string]func(t *testing.T) Store{
		"memstore": func(*testing.T) Store { return memstore.New() },
	}
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatalf("bunstore.OpenMemory: %v", err)
	}
	db.Close()
	if _, ok := any(bunstore.New(db)).(customdomain.Store); ok {
		out["bunstore-sqlite"] = func(t *testing.T) Store {
			db, err := bunstore.OpenMemory()
			if err != nil {
				t.Fatalf("bunstore.OpenMemory: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			if err := bunstore.Migrate(context.Background(), db); err != nil {
				t.Fatalf("bunstore.Migrate: %v", err)
			}
			return any(bunstore.New(db)).(Store)
		}
	}
	return out
}

// NewWorld builds a platform over store. now is the engine's clock.
func NewWorld(t testing.TB, store Store, now func() time.Time) *World {
	t.Helper()
	ctx := context.Background()
	w := &World{Store: store, Projects: domaintest.NewProjects()}
	keys := petstore.NewKeys(store)
	project := w.Projects.Lookup
	mk := func(plan petstore.Plan, deployed bool) (petstore.APIKey, string) {
		key, secret, err := keys.Create(ctx, "", plan, petstore.Limits{})
		if err != nil {
			t.Fatalf("create key: %v", err)
		}
		w.Projects.Set(customdomain.Project{ID: key.ProjectID, Plan: plan, Deployed: deployed})
		return key, secret
	}
	w.ProKey, w.Pro = mk(petstore.PlanPro, true)
	w.Pro2Key, w.Pro2 = mk(petstore.PlanBusiness, true)
	_, w.Free = mk(petstore.PlanFree, true)
	_, w.Undeployed = mk(petstore.PlanPro, false)

	world := domaintest.New(t, domaintest.Options{
		Zones: []string{Zone, "example.org"}, Store: store, Projects: w.Projects,
		Config: func(c *customdomain.EngineConfig) {
			c.CNAMETarget = Target
			c.EdgeIPs = []netip.Addr{edgeIP}
			c.Now = now
		},
	})
	w.Zone, w.DNS, w.Engine = world.Zone, world.DNS, world.Engine
	eng := w.Engine

	var err error
	w.Dash, err = dashboard.New(dashboard.Config{Engine: eng, Auth: keys})
	if err != nil {
		t.Fatalf("NewDashboard: %v", err)
	}
	v1, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys})
	if err != nil {
		t.Fatalf("httpx.New: %v", err)
	}
	platform := http.NewServeMux()
	platform.Handle("/v1/", v1)
	platform.Handle("/dashboard/", w.Dash)
	platform.Handle("/dashboard", w.Dash)
	var sitesMu sync.Mutex
	sites := map[string]http.Handler{}
	w.Edge, err = edge.New(edge.Config{
		PlatformHosts: []string{"localhost", "*.petstore.test"},
		Platform:      platform,
		Router:        eng,
		Site: func(projectID string) http.Handler {
			sitesMu.Lock()
			defer sitesMu.Unlock()
			if h, ok := sites[projectID]; ok {
				return h
			}
			if _, ok := project(projectID); !ok {
				return nil
			}
			h := testSite(projectID, v1)
			sites[projectID] = h
			return h
		},
	})
	if err != nil {
		t.Fatalf("NewEdge: %v", err)
	}
	return w
}

// SetCNAME makes label.example.com a CNAME to target in the test DNS, or
// removes it when target is "".
func (w *World) SetCNAME(t testing.TB, label, target string) {
	t.Helper()
	ctx := context.Background()
	old, err := w.Zone.GetRecords(ctx, Zone)
	if err != nil {
		t.Fatal(err)
	}
	var del []libdns.Record
	for _, r := range old {
		if rr := r.RR(); rr.Name == label && rr.Type == "CNAME" {
			del = append(del, r)
		}
	}
	if len(del) > 0 {
		if _, err := w.Zone.DeleteRecords(ctx, Zone, del); err != nil {
			t.Fatal(err)
		}
	}
	if target == "" {
		return
	}
	if _, err := w.Zone.AppendRecords(ctx, Zone, []libdns.Record{
		libdns.CNAME{Name: label, TTL: time.Minute, Target: target + "."},
	}); err != nil {
		t.Fatal(err)
	}
}

// AddTXT puts a TXT record at label.example.com, such as the ownership
// proof ("_petstore-challenge.shop") a domain's instructions list when
// another project held its name last.
func (w *World) AddTXT(t testing.TB, label, text string) {
	t.Helper()
	if _, err := w.Zone.AppendRecords(context.Background(), Zone, []libdns.Record{
		libdns.TXT{Name: label, TTL: time.Minute, Text: text},
	}); err != nil {
		t.Fatal(err)
	}
}

// Call sends one dashboard API request with key (none when "") and a JSON
// body (none when nil; a string is sent as it is), and checks the pair
// against the dashboard's OpenAPI document.
func (w *World) Call(t testing.TB, key, method, path string, body any) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.(string)
		if !ok {
			j, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			b = string(j)
		}
		rd = strings.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return DashboardDo(t, w.Dash, req)
}

// Get sends a plain request through the edge with the given Host.
func (w *World) Get(t testing.TB, host, path, key string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	w.Edge.ServeHTTP(rec, req)
	return rec
}

// Activate adds label.example.com for the key's project, points it at the
// platform in DNS and verifies it, failing unless it goes active.
func (w *World) Activate(t testing.TB, key, label string) {
	t.Helper()
	name := label + "." + Zone
	added := w.Call(t, key, http.MethodPost, DashAPI+"/domains", map[string]string{"name": name})
	if added.Status/100 != 2 {
		t.Fatalf("add %s: %d %s", name, added.Status, added.Body)
	}
	w.SetCNAME(t, label, Target)
	// A name another project held last also lists an ownership TXT record.
	for _, r := range added.Domain(t).Records {
		if r.Type == "TXT" {
			w.AddTXT(t, r.Name, r.Value)
		}
	}
	res := w.Call(t, key, http.MethodPost, DashAPI+"/domains/"+name+"/verify", nil)
	if d := res.Domain(t); d.Status != customdomain.StatusActive {
		t.Fatalf("verify %s: %d %s", name, res.Status, res.Body)
	}
}

// testSite stands in for a platform's project site behind the edge: the
// pets API under /v1/, a page naming the project at /, 404 elsewhere.
func testSite(projectID string, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/"):
			api.ServeHTTP(w, r)
		case r.URL.Path == "/":
			fmt.Fprintf(w, "the site of project %s", projectID)
		default:
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s", r.URL.Path))
		}
	})
}
