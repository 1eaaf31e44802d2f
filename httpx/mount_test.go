package httpx_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/petstorekit/petstore/httpx"
)

// TestMount proves the handler on the stdlib mux at /v1/, under a prefix,
// and on chi, next to the owner's own routes: the Location and Link
// headers and the served document follow the mount.
func TestMount(t *testing.T) {
	own := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("own")) })
	tests := []struct {
		name, base string
		mount      func(api http.Handler) http.Handler
	}{
		{"stdlib mux", "/v1", func(api http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/v1/", api)
			mux.Handle("GET /healthz", own)
			return mux
		}},
		{"stdlib mux under a prefix", "/api/v1", func(api http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/api/v1/", api)
			mux.Handle("GET /healthz", own)
			return mux
		}},
		{"chi", "/v1", func(api http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Mount("/v1", api)
			r.Get("/healthz", own)
			return r
		}},
		{"chi under a prefix", "/api/v1", func(api http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Route("/api", func(r chi.Router) { r.Mount("/v1", api) })
			r.Get("/healthz", own)
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *httpx.Config) { c.BasePath = tt.base })
			h := tt.mount(e.h)
			res := do(t, h, tt.base, e.req("POST", tt.base+"/pets", `{"name":"Rex","categoryId":1}`))
			if res.Status != 201 || res.Header.Get("Location") != tt.base+"/pets/1" {
				t.Fatalf("create: %d Location %q", res.Status, res.Header.Get("Location"))
			}
			do(t, h, tt.base, e.req("POST", tt.base+"/pets", `{"name":"Max","categoryId":1}`))
			res = do(t, h, tt.base, e.req("GET", tt.base+"/pets?limit=1", ""))
			if link := res.Header.Get("Link"); res.Status != 200 || link == "" || link[:len(tt.base)+6] != "<"+tt.base+"/pets" {
				t.Fatalf("list: %d Link %q", res.Status, link)
			}
			res = do(t, h, tt.base, e.req("GET", tt.base+"/pets/1", ""))
			if res.Status != 200 || res.Header.Get("Link") != "<"+tt.base+`/pets>; rel="successor-version"` {
				t.Fatalf("get: %d Link %q", res.Status, res.Header.Get("Link"))
			}
			if res := do(t, h, tt.base, e.req("GET", tt.base+"/nope", "")); res.Status != 404 {
				t.Fatalf("unknown path: %d", res.Status)
			}
			res = do(t, h, tt.base, e.req("GET", tt.base+"/openapi.json", ""))
			var doc struct {
				Servers []struct{ URL string } `json:"servers"`
			}
			if err := json.Unmarshal(res.Body, &doc); err != nil || len(doc.Servers) != 3 || doc.Servers[0].URL != tt.base {
				t.Fatalf("servers = %+v (%v), want %s first", doc.Servers, err, tt.base)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Body.String() != "own" {
				t.Fatalf("the owner's route answered %q", rec.Body)
			}
		})
	}
}
