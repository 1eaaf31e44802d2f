package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// TestWrap checks the building blocks another API (the dashboard) uses:
// the same auth, limits, request ids and Error bodies around its own mux.
func TestWrap(t *testing.T) {
	e := newEnv(t, nil)
	f := &fakeLimiter{counts: map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dashboard/api/whoami", func(w http.ResponseWriter, r *http.Request) {
		key, ok := httpx.KeyFromContext(r.Context())
		if !ok {
			httpx.WriteError(w, r, petstore.Errorf(petstore.CodeUnauthorized, "no key"))
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"key": key.ID, "request": httpx.RequestIDFromContext(r.Context())})
	})
	mux.HandleFunc("GET /dashboard/api/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := httpx.KeyFromContext(r.Context()); ok {
			t.Error("a public path saw a key")
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{})
	})
	mux.HandleFunc("GET /dashboard/api/panic", func(http.ResponseWriter, *http.Request) { panic("dashboard bug") })
	h, err := httpx.Wrap(httpx.Config{Auth: petstore.NewKeys(e.store), Limiter: f, Logger: nil}, mux, "/dashboard/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		auth       bool
		want       int
		body       string
	}{
		{"authenticated", "/dashboard/api/whoami", true, 200, `"key":"` + e.key.ID + `"`},
		{"no key", "/dashboard/api/whoami", false, 401, `"code":"unauthorized"`},
		{"public", "/dashboard/api/openapi.json", false, 200, `{}`},
		{"panic", "/dashboard/api/panic", true, 500, `"code":"internal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.auth {
				r.Header.Set("Authorization", "Bearer "+e.secret)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("%d %s, want %d with %s", rec.Code, rec.Body, tt.want, tt.body)
			}
			limit := "60" // the key's plan, or a wrong key's address budget
			if tt.name == "public" {
				limit = "600" // the address's public budget
			}
			if rec.Header().Get("X-Request-Id") == "" || rec.Header().Get("X-RateLimit-Limit") != limit {
				t.Fatalf("missing chain headers: %v", rec.Header())
			}
		})
	}
}
