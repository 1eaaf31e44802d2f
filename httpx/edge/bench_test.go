package edge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// BenchmarkEdge measures the edge's cost per request by Host: a custom
// domain served by its project's site, a redirect, an unknown Host (404)
// and a platform host, against a bare handler writing the same page.
func BenchmarkEdge(b *testing.B) {
	w := apitest.NewWorld(b, memstore.New(), testenv.NewClock(domaintest.Start).Now)
	w.Activate(b, w.Pro, "shop")
	w.Activate(b, w.Pro, "www")
	w.Call(b, w.Pro, http.MethodPut, apitest.DashAPI+"/domains/config", map[string]any{
		"primary": "shop.example.com", "redirects": []map[string]any{{"from": "www.example.com", "to": "shop.example.com"}},
	})
	site := w.Get(b, "shop.example.com", "/", "").Body.Bytes()
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
		{"custom-domain", "shop.example.com", w.Edge, 200},
		{"redirect", "www.example.com", w.Edge, 301},
		{"unknown-host", "nobody.example.org", w.Edge, 404},
		{"platform-host", "localhost", w.Edge, 404}, // "/" is not a platform path: the platform's own 404
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
