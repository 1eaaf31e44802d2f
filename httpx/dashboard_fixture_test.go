package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/domain"
	"github.com/petstorekit/petstore/httpx"
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
	domain.Store
}

// dashWorld is a whole platform, composed the way examples/server does: one
// store, keys that are each their own project, the domain engine reading a
// test DNS server, the dashboard, /v1 and the edge in front of them.
type dashWorld struct {
	store  dashStore
	engine *domain.Engine
	zone   *memzone.Provider
	dns    *memzone.Server
	dash   http.Handler // the dashboard alone
	edge   http.Handler // everything, routed by Host

	pro, pro2, free, undeployed string // key secrets
	proKey, pro2Key             petstore.APIKey
}

// dashStores lists the stores the dashboard tests run on: the memory store
// and, once bunstore implements domain.Store, bunstore on SQLite.
func dashStores(t *testing.T) map[string]func(t *testing.T) dashStore {
	out := map[string]func(t *testing.T) dashStore{
		"memstore": func(*testing.T) dashStore { return memstore.New() },
	}
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatalf("bunstore.OpenMemory: %v", err)
	}
	db.Close()
	if _, ok := any(bunstore.New(db)).(domain.Store); ok {
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
	w := &dashWorld{store: store}
	w.zone, w.dns = memzone.NewTestServer(t, dashZone, "example.org")

	keys := petstore.NewKeys(store)
	projects := map[string]domain.Project{}
	mk := func(plan petstore.Plan, deployed bool) (petstore.APIKey, string) {
		key, secret, err := keys.Create(ctx, "", plan, petstore.Limits{})
		if err != nil {
			t.Fatalf("create key: %v", err)
		}
		projects[key.ProjectID] = domain.Project{ID: key.ProjectID, Plan: plan, Deployed: deployed}
		return key, secret
	}
	w.proKey, w.pro = mk(petstore.PlanPro, true)
	w.pro2Key, w.pro2 = mk(petstore.PlanBusiness, true)
	_, w.free = mk(petstore.PlanFree, true)
	_, w.undeployed = mk(petstore.PlanPro, false)

	eng, err := domain.New(domain.EngineConfig{
		Store: store,
		Projects: domain.ProjectsFunc(func(_ context.Context, id string) (domain.Project, error) {
			if p, ok := projects[id]; ok {
				return p, nil
			}
			return domain.Project{}, petstore.Errorf(petstore.CodeNotFound, "project %s not found", id)
		}),
		Resolver:    dnsresolver.New(w.dns.Addr()),
		CNAMETarget: dashTarget,
		EdgeIPs:     []netip.Addr{dashEdgeIP},
		Now:         now,
	})
	if err != nil {
		t.Fatalf("domain.New: %v", err)
	}
	w.engine = eng

	w.dash, err = httpx.NewDashboard(httpx.DashboardConfig{Engine: eng, Auth: keys})
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
	w.edge, err = httpx.NewEdge(httpx.EdgeConfig{
		PlatformHosts: []string{"localhost", "*.petstore.test"},
		Platform:      platform,
		Router:        eng,
		Site: func(projectID string) http.Handler {
			sitesMu.Lock()
			defer sitesMu.Unlock()
			if h, ok := sites[projectID]; ok {
				return h
			}
			if _, ok := projects[projectID]; !ok {
				return nil
			}
			h := httpx.ProjectSite(projectID, v1)
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

// addA puts an A record at label.example.com.
func (w *dashWorld) addA(t testing.TB, label, ip string) {
	t.Helper()
	if _, err := w.zone.AppendRecords(context.Background(), dashZone, []libdns.Record{
		libdns.Address{Name: label, TTL: time.Minute, IP: netip.MustParseAddr(ip)},
	}); err != nil {
		t.Fatal(err)
	}
}

// dashRes is a recorded response with its body read.
type dashRes struct {
	Status int
	Header http.Header
	Body   []byte
}

// errorBody decodes an Error body, failing when it is not one that agrees
// with the status.
func (r dashRes) errorBody(t testing.TB) petstore.Error {
	t.Helper()
	var e petstore.Error
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("body is not an Error: %q (%v)", r.Body, err)
	}
	if e.Status != r.Status || petstore.StatusOf(e.Code) != r.Status {
		t.Fatalf("Error %+v does not match status %d", e, r.Status)
	}
	return e
}

// domain decodes a Domain body.
func (r dashRes) domain(t testing.TB) domain.Domain {
	t.Helper()
	var d domain.Domain
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatalf("body is not a Domain: %q (%v)", r.Body, err)
	}
	return d
}

// call sends one dashboard API request with key (none when "") and a JSON
// body (none when nil; a string is sent as it is), and checks the pair
// against the dashboard's OpenAPI document.
func (w *dashWorld) call(t testing.TB, key, method, path string, body any) dashRes {
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

var (
	dashRouterOnce sync.Once
	dashRouter     routers.Router
	dashRouterErr  error
)

// dashContractRouter loads the document the dashboard serves, once.
func dashContractRouter(t testing.TB, h http.Handler) routers.Router {
	t.Helper()
	dashRouterOnce.Do(func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/dashboard/api/openapi.json", nil))
		if rec.Code != http.StatusOK {
			dashRouterErr = errors.New("GET /dashboard/api/openapi.json: " + rec.Result().Status)
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
		if err == nil {
			err = doc.Validate(context.Background())
		}
		if err == nil {
			dashRouter, err = legacy.NewRouter(doc)
		}
		dashRouterErr = err
	})
	if dashRouterErr != nil {
		t.Fatalf("dashboard OpenAPI document: %v", dashRouterErr)
	}
	return dashRouter
}

// dashDo serves req on the dashboard and validates the pair against the
// dashboard's OpenAPI document: a 2xx answer needs a request the document
// accepts, and every response must match it, status, headers and body.
// Requests outside the document (unknown paths and methods) must still get
// an Error body.
func dashDo(t testing.TB, h http.Handler, req *http.Request) dashRes {
	t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := dashRes{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}
	if got := res.Header.Get(httpx.StabilityHeader); got != "beta" {
		t.Fatalf("%s %s: X-API-Stability = %q, want beta", req.Method, req.URL, got)
	}

	router := dashContractRouter(t, h)
	creq := req.Clone(context.Background())
	creq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(creq)
	if err != nil {
		var re *routers.RouteError
		if !errors.As(err, &re) {
			t.Fatalf("contract: find route: %v", err)
		}
		switch res.Status {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized:
		default:
			t.Fatalf("contract: %s %s is not in the document but answered %d", req.Method, req.URL, res.Status)
		}
		res.errorBody(t)
		return res
	}
	in := &openapi3filter.RequestValidationInput{
		Request: creq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && res.Status/100 == 2 {
		t.Fatalf("contract: %s %s answered %d but the document rejects the request: %v", req.Method, req.URL, res.Status, err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(res.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Fatalf("contract: %s %s -> %d %s: %v", req.Method, req.URL, res.Status, res.Body, err)
	}
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

// dashClock is a clock tests move by hand.
type dashClock struct {
	mu  sync.Mutex
	now time.Time
}

func newDashClock() *dashClock {
	return &dashClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
}

func (c *dashClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *dashClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
