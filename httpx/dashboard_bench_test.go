package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore/adapters/memstore"
)

// BenchmarkEdge measures the edge's cost per request by Host: a custom
// domain served by its project's site, a redirect, an unknown Host (404)
// and a platform host, against a bare handler writing the same page.
func BenchmarkEdge(b *testing.B) {
	w := newDashWorld(b, memstore.New(), newClock().Now)
	w.activate(b, w.pro, "shop")
	w.activate(b, w.pro, "www")
	w.call(b, w.pro, http.MethodPut, dashAPI+"/domains/config", map[string]any{
		"primary": "shop.example.com", "redirects": []map[string]any{{"from": "www.example.com", "to": "shop.example.com"}},
	})
	site := w.get(b, "shop.example.com", "/", "").Body.Bytes()
	bare := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = rw.Write(site)
	})
	cases := []struct {
		name, host string
		h          http.Handler
		want       int
	}{
		{"bare", "shop.example.com", bare, 200},
		{"custom-domain", "shop.example.com", w.edge, 200},
		{"redirect", "www.example.com", w.edge, 301},
		{"unknown-host", "nobody.example.org", w.edge, 404},
		{"platform-host", "localhost", w.edge, 404}, // "/" is not a platform path: the platform's own 404
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = c.host
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, req)
				if rec.Code != c.want {
					b.Fatalf("%d, want %d", rec.Code, c.want)
				}
			}
		})
	}
}

// BenchmarkDashboardList measures GET /dashboard/api/domains with ten
// domains: authentication, the engine's List and Config, and encoding.
func BenchmarkDashboardList(b *testing.B) {
	w := newDashWorld(b, memstore.New(), newClock().Now)
	for _, l := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		w.call(b, w.pro, http.MethodPost, dashAPI+"/domains", map[string]string{"name": l + ".example.com"})
	}
	req := httptest.NewRequest(http.MethodGet, dashAPI+"/domains", nil)
	req.Header.Set("Authorization", "Bearer "+w.pro)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		w.dash.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
