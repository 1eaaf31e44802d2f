package httpx_test

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
	dashZone   = "example.com"
	dashTarget = "edge.petstore.test"
)

var dashEdgeIP = netip.MustParseAddr("127.0.0.1")

// dashStore is what a store must offer for the whole server: pets, keys
// and domains.
type dashStore interface {
	petstore.Store
	customdomain.Store
}

// dashWorld is a whole platform, composed the way examples/server does: one
// store, keys that are each their own project, the domain engine reading a
// test DNS server, the dashboard, /v1 and the edge in front of them.
type dashWorld struct {
	store  dashStore
	engine *customdomain.Engine
	zone   *memzone.Provider
	dns    *memzone.Server
	dash   http.Handler // the dashboard alone
	edge   http.Handler // everything, routed by Host

	pro, pro2, free, undeployed string // key secrets
	proKey, pro2Key             petstore.APIKey

	projects *domaintest.Projects
}

// setPlan changes a project's plan, as a plan change on the platform does.
func (w *dashWorld) setPlan(projectID string, plan petstore.Plan) {
	w.projects.SetPlan(projectID, plan)
}

// dashStores lists the stores the dashboard tests run on: the memory store
// and, once bunstore implements customdomain.Store, bunstore on SQLite.
func dashStores(t *testing.T) map[string]func(t *testing.T) dashStore {
	out := map[string]func(t *testing.T) dashStore{
		"memstore": func(*testing.T) dashStore { return memstore.New() },
	}
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatalf("bunstore.OpenMemory: %v", err)
	}
	db.Close()
	if _, ok := any(bunstore.New(db)).(customdomain.Store); ok {
		out["bunstore-sqlite"] = func(t *testing.T) dashStore {
			db, err := bunstore.OpenMemory()
			if err != nil {
				t.Fatalf("bunstore.OpenMemory: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			if err := bunstore.Migrate(context.Background(), db); err != nil {
				t.Fatalf("bunstore.Migrate: %v", err)
			}
			return any(bunstore.New(db)).(dashStore)
		}
	}
	return out
}

// newDashWorld builds a platform over store. now is the engine's clock.
func newDashWorld(t testing.TB, store dashStore, now func() time.Time) *dashWorld {
	t.Helper()
	ctx := context.Background()
	w := &dashWorld{store: store, projects: domaintest.NewProjects()}
	keys := petstore.NewKeys(store)
	project := w.projects.Lookup
	mk := func(plan petstore.Plan, deployed bool) (petstore.APIKey, string) {
		key, secret, err := keys.Create(ctx, "", plan, petstore.Limits{})
		if err != nil {
			t.Fatalf("create key: %v", err)
		}
		w.projects.Set(customdomain.Project{ID: key.ProjectID, Plan: plan, Deployed: deployed})
		return key, secret
	}
	w.proKey, w.pro = mk(petstore.PlanPro, true)
	w.pro2Key, w.pro2 = mk(petstore.PlanBusiness, true)
	_, w.free = mk(petstore.PlanFree, true)
	_, w.undeployed = mk(petstore.PlanPro, false)

	world := domaintest.New(t, domaintest.Options{
		Zones: []string{dashZone, "example.org"}, Store: store, Projects: w.projects,
		Config: func(c *customdomain.EngineConfig) {
			c.CNAMETarget = dashTarget
			c.EdgeIPs = []netip.Addr{dashEdgeIP}
			c.Now = now
		},
	})
	w.zone, w.dns, w.engine = world.Zone, world.DNS, world.Engine
	eng := w.engine

	var err error
	w.dash, err = dashboard.New(dashboard.Config{Engine: eng, Auth: keys})
	if err != nil {
		t.Fatalf("NewDashboard: %v", err)
	}
	v1, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys})
	if err != nil {
		t.Fatalf("httpx.New: %v", err)
	}
	platform := http.NewServeMux()
	platform.Handle("/v1/", v1)
	platform.Handle("/dashboard/", w.dash)
	platform.Handle("/dashboard", w.dash)
	var sitesMu sync.Mutex
	sites := map[string]http.Handler{}
	w.edge, err = edge.New(edge.Config{
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

// setCNAME makes label.example.com a CNAME to target in the test DNS, or
// removes it when target is "".
func (w *dashWorld) setCNAME(t testing.TB, label, target string) {
	t.Helper()
	ctx := context.Background()
	old, err := w.zone.GetRecords(ctx, dashZone)
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
		if _, err := w.zone.DeleteRecords(ctx, dashZone, del); err != nil {
			t.Fatal(err)
		}
	}
	if target == "" {
		return
	}
	if _, err := w.zone.AppendRecords(ctx, dashZone, []libdns.Record{
		libdns.CNAME{Name: label, TTL: time.Minute, Target: target + "."},
	}); err != nil {
		t.Fatal(err)
	}
}

// addTXT puts a TXT record at label.example.com, such as the ownership
// proof ("_petstore-challenge.shop") a domain's instructions list when
// another project held its name last.
func (w *dashWorld) addTXT(t testing.TB, label, text string) {
	t.Helper()
	if _, err := w.zone.AppendRecords(context.Background(), dashZone, []libdns.Record{
		libdns.TXT{Name: label, TTL: time.Minute, Text: text},
	}); err != nil {
		t.Fatal(err)
	}
}

// call sends one dashboard API request with key (none when "") and a JSON
// body (none when nil; a string is sent as it is), and checks the pair
// against the dashboard's OpenAPI document.
func (w *dashWorld) call(t testing.TB, key, method, path string, body any) response {
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
	return dashDo(t, w.dash, req)
}

// dashDo serves req on the dashboard and checks the pair against the
// dashboard's OpenAPI document (see checkContract), and that it says the
// API is in beta. Requests outside the document may meet authentication
// first.
func dashDo(t testing.TB, h http.Handler, req *http.Request) response {
	t.Helper()
	res, reqBody := serve(h, req)
	if got := res.Header.Get(httpx.StabilityHeader); got != "beta" {
		t.Fatalf("%s %s: X-API-Stability = %q, want beta", req.Method, req.URL, got)
	}
	router := documentRouter(t, "/dashboard/api/openapi.json", func() http.Handler { return h })
	checkContract(t, router, req, reqBody, res, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized)
	return res
}

// get sends a plain request through the edge with the given Host.
func (w *dashWorld) get(t testing.TB, host, path, key string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	w.edge.ServeHTTP(rec, req)
	return rec
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
