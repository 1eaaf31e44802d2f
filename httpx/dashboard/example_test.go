package dashboard_test

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
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/dashboard"
)

// Mount the dashboard next to /v1 and add a custom domain through its API.
// Every key is its own project; here the project is on Pro and deployed.
func ExampleNew() {
	ctx := context.Background()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	key, secret, _ := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})

	engine, err := customdomain.New(customdomain.EngineConfig{
		Store: store,
		Projects: customdomain.ProjectsFunc(func(_ context.Context, id string) (customdomain.Project, error) {
			return customdomain.Project{ID: id, Plan: key.Plan, Deployed: true}, nil
		}),
		Resolver:    dnsresolver.New("127.0.0.1:53"),
		CNAMETarget: "edge.petstore.example",
		EdgeIPs:     []netip.Addr{netip.MustParseAddr("192.0.2.1")},
	})
	if err != nil {
		panic(err)
	}
	dash, err := dashboard.New(dashboard.Config{Engine: engine, Auth: keys})
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
