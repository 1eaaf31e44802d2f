package httpx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/domain"
	"github.com/petstorekit/petstore/httpx"
)

// Mount the dashboard next to /v1 and add a custom domain through its API.
// Every key is its own project; here the project is on Pro and deployed.
func ExampleNewDashboard() {
	ctx := context.Background()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	key, secret, _ := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})

	engine, err := domain.New(domain.EngineConfig{
		Store: store,
		Projects: domain.ProjectsFunc(func(_ context.Context, id string) (domain.Project, error) {
			return domain.Project{ID: id, Plan: key.Plan, Deployed: true}, nil
		}),
		Resolver:    dnsresolver.New("127.0.0.1:53"),
		CNAMETarget: "edge.petstore.example",
		EdgeIPs:     []netip.Addr{netip.MustParseAddr("192.0.2.1")},
	})
	if err != nil {
		panic(err)
	}
	dash, err := httpx.NewDashboard(httpx.DashboardConfig{Engine: engine, Auth: keys})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", dash)

	req := httptest.NewRequest(http.MethodPost, "/dashboard/api/domains", strings.NewReader(`{"name":"shop.example.com"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Header().Get("X-API-Stability"))
	d, _ := engine.Get(ctx, key.ProjectID, "shop.example.com")
	r := d.Records[0]
	fmt.Println(d.Status, r.Type, r.Name, r.Value, r.TTL)
	// Output:
	// 201 beta
	// pending CNAME shop edge.petstore.example 3600
}

// Put the edge in front of everything: platform hosts reach the platform,
// custom domains their project's site or their redirect, anything else 404.
func ExampleNewEdge() {
	platform := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "platform") })
	// The engine is the Router in a real server; a fixed table shows the idea.
	router := httpx.RouterFunc(func(host string) domain.RouteAnswer {
		switch host {
		case "shop.example.com":
			return domain.RouteAnswer{Kind: domain.RouteServe, Name: host, ProjectID: "prj_1"}
		case "www.example.com":
			return domain.RouteAnswer{Kind: domain.RouteRedirect, Name: host, ProjectID: "prj_1", RedirectTo: "shop.example.com", Status: 301}
		}
		return domain.RouteAnswer{Kind: domain.RouteNone, Name: host}
	})
	edge, err := httpx.NewEdge(httpx.EdgeConfig{
		PlatformHosts: []string{"localhost"},
		Platform:      platform,
		Router:        router,
		Site: func(projectID string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the site of ", projectID) })
		},
	})
	if err != nil {
		panic(err)
	}
	for _, host := range []string{"localhost:8080", "127.0.0.1", "shop.example.com", "www.example.com", "nobody.example.org"} {
		req := httptest.NewRequest(http.MethodGet, "/?q=1", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		edge.ServeHTTP(rec, req)
		fmt.Println(host, rec.Code, rec.Header().Values("Location"))
	}
	// Output:
	// localhost:8080 200 []
	// 127.0.0.1 200 []
	// shop.example.com 200 []
	// www.example.com 301 [http://shop.example.com/?q=1]
	// nobody.example.org 404 []
}
