package edge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestEdgeRoutesByHost: platform hosts reach the platform, each active
// domain its own project's site, redirects their target, and every other
// Host a 404 that shows no project's content.
func TestEdgeRoutesByHost(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(domaintest.Start)
	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), clock.Now)
	a, b := w.ProKey.ProjectID, w.Pro2Key.ProjectID
	w.Activate(t, w.Pro, "shop")
	w.Activate(t, w.Pro, "www")
	w.Activate(t, w.Pro, "old")
	w.Activate(t, w.Pro, "tmp")
	w.Activate(t, w.Pro, "perm")
	w.Activate(t, w.Pro2, "other")
	w.Call(t, w.Pro2, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "pending.example.com"})
	cfg := map[string]any{"primary": "shop.example.com", "redirects": []map[string]any{
		{"from": "www.example.com", "to": "shop.example.com"},
		{"from": "old.example.com", "to": "shop.example.com", "status": 302},
		{"from": "tmp.example.com", "to": "shop.example.com", "status": 307},
		{"from": "perm.example.com", "to": "shop.example.com", "status": 308},
	}}
	if res := w.Call(t, w.Pro, http.MethodPut, apitest.DashAPI+"/domains/config", cfg); res.Status != http.StatusOK {
		t.Fatalf("config: %d %s", res.Status, res.Body)
	}

	cases := []struct {
		name, host, path string
		key              string
		status           int
		contains         string // in the body
		absent           string // never in the body
		location         string
	}{
		{"localhost", "localhost", "/dashboard/", "", 200, "Project settings", "", ""},
		{"localhost with port", "localhost:8080", "/dashboard/", "", 200, "Project settings", "", ""},
		{"ipv4 literal", "127.0.0.1:8080", "/dashboard/", "", 200, "Project settings", "", ""},
		{"ipv6 literal", "[::1]:8080", "/dashboard/", "", 200, "Project settings", "", ""},
		{"platform wildcard", "app.petstore.test", "/dashboard/", "", 200, "Project settings", "", ""},
		{"platform v1", "LOCALHOST", "/v1/pets", w.Pro, 200, "[", "", ""},
		{"active domain page", "shop.example.com", "/", "", 200, a, b, ""},
		{"active domain, other case, port, dot", "Shop.Example.COM.:8080", "/", "", 200, a, b, ""},
		{"active domain api", "shop.example.com", "/v1/pets", w.Pro, 200, "[", "", ""},
		{"active domain api needs a key", "shop.example.com", "/v1/pets", "", 401, "unauthorized", "", ""},
		{"active domain hides the dashboard", "shop.example.com", "/dashboard/", "", 404, "not_found", "Project settings", ""},
		{"second project's domain", "other.example.com", "/", "", 200, b, a, ""},
		{"redirect default 301", "www.example.com", "/a/b?c=d&e", "", 301, "", a, "http://shop.example.com/a/b?c=d&e"},
		{"redirect drops the client's port", "www.example.com:8080", "/", "", 301, "", a, "http://shop.example.com/"},
		{"redirect 302", "old.example.com", "/x", "", 302, "", a, "http://shop.example.com/x"},
		{"redirect 307", "tmp.example.com", "/x", "", 307, "", a, "http://shop.example.com/x"},
		{"redirect 308", "perm.example.com", "/x", "", 308, "", a, "http://shop.example.com/x"},
		{"pending domain", "pending.example.com", "/", "", 404, "not_found", b, ""},
		{"unknown host", "nobody.example.org", "/", "", 404, "not_found", a, ""},
		{"unknown host api", "nobody.example.org", "/v1/pets", w.Pro, 404, "not_found", "[]", ""},
		{"lookalike of an active domain", "shop.example.com.evil.example", "/", "", 404, "not_found", a, ""},
		{"sub-name of an active domain", "x.shop.example.com", "/", "", 404, "not_found", a, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := w.Get(t, c.host, c.path, c.key)
			body := rec.Body.String()
			if rec.Code != c.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, c.status, body)
			}
			if !strings.Contains(body, c.contains) || (c.absent != "" && strings.Contains(body, c.absent)) {
				t.Fatalf("body %q: want %q, never %q", body, c.contains, c.absent)
			}
			if got := rec.Header().Get("Location"); got != c.location {
				t.Fatalf("Location = %q, want %q", got, c.location)
			}
			if c.status == 404 {
				var e petstore.Error
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != petstore.CodeNotFound || e.Status != 404 {
					t.Fatalf("404 body is not an Error: %s", body)
				}
			}
		})
	}

	t.Run("removed stops at once", func(t *testing.T) {
		if got := w.Get(t, "other.example.com", "/", "").Code; got != 200 {
			t.Fatalf("before removal: %d", got)
		}
		if res := w.Call(t, w.Pro2, http.MethodDelete, apitest.DashAPI+"/domains/other.example.com", nil); res.Status != 204 {
			t.Fatalf("remove: %d %s", res.Status, res.Body)
		}
		rec := w.Get(t, "other.example.com", "/", "")
		if rec.Code != 404 || strings.Contains(rec.Body.String(), b) {
			t.Fatalf("after removal: %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("re-added by another project serves only the new owner", func(t *testing.T) {
		w.Activate(t, w.Pro, "other")
		rec := w.Get(t, "other.example.com", "/", "")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), a) || strings.Contains(rec.Body.String(), b) {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})

	t.Run("failed after 48 hours is 404", func(t *testing.T) {
		w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "late.example.com"})
		clock.Advance(49 * time.Hour)
		if _, err := w.Engine.RunDue(context.Background(), clock.Now()); err != nil {
			t.Fatal(err)
		}
		res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/late.example.com", nil)
		if d := res.Domain(t); d.Status != customdomain.StatusFailed {
			t.Fatalf("after 49 hours: %s", res.Body)
		}
		if got := w.Get(t, "late.example.com", "/", "").Code; got != 404 {
			t.Fatalf("failed domain: %d", got)
		}
	})
}

// TestNewEdgeConfig: the edge refuses an incomplete configuration.
func TestNewEdgeConfig(t *testing.T) {
	ok := http.NotFoundHandler()
	router := edge.RouterFunc(func(string) customdomain.RouteAnswer { return customdomain.RouteAnswer{} })
	site := func(string) http.Handler { return ok }
	cases := []struct {
		name string
		cfg  edge.Config
	}{
		{"no platform", edge.Config{Router: router, Site: site}},
		{"no router", edge.Config{Platform: ok, Site: site}},
		{"no site", edge.Config{Platform: ok, Router: router}},
		{"bad scheme", edge.Config{Platform: ok, Router: router, Site: site, RedirectScheme: "ftp"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := edge.New(c.cfg); err == nil {
				t.Fatal("NewEdge accepted it")
			}
		})
	}
}

// TestEdgeRedirectScheme: behind TLS the Location says https, and the
// client's Host port never reaches the Location (issue 26): it names the
// target on the scheme's default port.
func TestEdgeRedirectScheme(t *testing.T) {
	router := edge.RouterFunc(func(host string) customdomain.RouteAnswer {
		return customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: host, RedirectTo: "shop.example.com", Status: 0}
	})
	for _, c := range []struct {
		scheme, host, want string
	}{
		{"", "www.example.com", "http://shop.example.com/p?q=1"},
		{"", "www.example.com:8080", "http://shop.example.com/p?q=1"},
		{"", "www.example.com:1", "http://shop.example.com/p?q=1"},
		{"https", "www.example.com:8080", "https://shop.example.com/p?q=1"},
	} {
		t.Run(c.scheme, func(t *testing.T) {
			h, err := edge.New(edge.Config{Platform: http.NotFoundHandler(), Router: router, RedirectScheme: c.scheme,
				Site: func(string) http.Handler { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/p?q=1", nil)
			req.Host = c.host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != c.want {
				t.Fatalf("%d %q, want 301 %q", rec.Code, rec.Header().Get("Location"), c.want)
			}
		})
	}
}

// TestEdgeSiteMissing: a routing answer for a project that has no site is
// a 404, not a panic or another project's site.
func TestEdgeSiteMissing(t *testing.T) {
	router := edge.RouterFunc(func(host string) customdomain.RouteAnswer {
		return customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: host, ProjectID: "prj_gone"}
	})
	h, err := edge.New(edge.Config{Platform: http.NotFoundHandler(), Router: router, Site: func(string) http.Handler { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "shop.example.com"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"not_found"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// TestRequestHost: the form the edge routes on.
func TestRequestHost(t *testing.T) {
	for in, want := range map[string]string{
		"Shop.Example.com":      "shop.example.com",
		"shop.example.com:8080": "shop.example.com",
		"shop.example.com.":     "shop.example.com",
		"[::1]:8080":            "::1",
		"[::1]":                 "::1",
		"127.0.0.1:80":          "127.0.0.1",
		"":                      "",
	} {
		t.Run(in, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = in
			if got := edge.RequestHost(r); got != want {
				t.Fatalf("RequestHost(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// OPTIONS * asks about the server, not a resource (RFC 9110 §9.3.7): a
// redirect domain must not answer it with a Location built from "*", and a
// served domain's site is not asked about it. The edge answers it itself,
// as net/http's server does when it is left to: 200 with no body. It
// reaches the edge only when the server's DisableGeneralOptionsHandler is
// set, so both servers are tried.
func TestOptionsAsteriskIsAboutTheServer(t *testing.T) {
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
		Platform: http.NotFoundHandler(),
		Router:   router,
		Site: func(string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusTeapot) // the project's content: not what OPTIONS * asks for
			})
		},
		RedirectScheme: "https",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, disable := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(front)
		srv.Config.DisableGeneralOptionsHandler = disable
		srv.Start()
		for _, host := range []string{"shop.example.com", "www.example.com"} {
			t.Run(fmt.Sprintf("%s/DisableGeneralOptionsHandler=%v", host, disable), func(t *testing.T) {
				c, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				fmt.Fprintf(c, "OPTIONS * HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
				resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodOptions})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" {
					t.Fatalf("OPTIONS * = %d, Location %q; want 200 and no redirect", resp.StatusCode, resp.Header.Get("Location"))
				}
			})
		}
		srv.Close()
	}
}
