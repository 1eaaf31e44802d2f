package edge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/edge"
)

// Put the edge in front of everything: platform hosts reach the platform,
// custom domains their project's site or their redirect, anything else 404.
func ExampleNew() {
	platform := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "platform") })
	// The engine is the Router in a real server; a fixed table shows the idea.
	router := edge.RouterFunc(func(host string) customdomain.RouteAnswer {
		switch host {
		case "shop.example.com":
			return customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: host, ProjectID: "prj_1"}
		case "www.example.com":
			return customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: host, ProjectID: "prj_1", RedirectTo: "shop.example.com", Status: 301}
		}
		return customdomain.RouteAnswer{Kind: customdomain.RouteNone, Name: host}
	})
	front, err := edge.New(edge.Config{
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
		front.ServeHTTP(rec, req)
		fmt.Println(host, rec.Code, rec.Header().Values("Location"))
	}
	// Output:
	// localhost:8080 200 []
	// 127.0.0.1 200 []
	// shop.example.com 200 []
	// www.example.com 301 [http://shop.example.com/?q=1]
	// nobody.example.org 404 []
}
