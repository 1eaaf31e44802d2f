package httpx_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/testenv"
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

// An informational answer (103 Early Hints) does not start the response:
// a handler behind Wrap that panics after one still answers 500 with an
// Error body, and the access log has the final status.
func TestWrapAfterEarlyHints(t *testing.T) {
	e := newEnv(t, nil)
	mux := http.NewServeMux()
	hint := func(w http.ResponseWriter) {
		w.Header().Set("Link", "</dashboard/app.js>; rel=preload; as=script")
		w.WriteHeader(http.StatusEarlyHints)
	}
	mux.HandleFunc("GET /dashboard/api/panic", func(w http.ResponseWriter, _ *http.Request) {
		hint(w)
		panic("dashboard bug")
	})
	mux.HandleFunc("GET /dashboard/api/gone", func(w http.ResponseWriter, r *http.Request) {
		hint(w)
		httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "gone"))
	})
	mux.HandleFunc("GET /dashboard/api/page", func(w http.ResponseWriter, r *http.Request) {
		hint(w)
		w.Header().Set("ETag", `"v1"`)
		w.WriteHeader(http.StatusNotModified)
	})
	logs := &testenv.Buffer{}
	h, err := httpx.Wrap(httpx.Config{Auth: petstore.NewKeys(e.store), AccessLog: slog.New(slog.NewJSONHandler(logs, nil)),
		Limiter: &fakeLimiter{counts: map[string]int64{}}}, mux)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for path, want := range map[string]int{"/dashboard/api/panic": 500, "/dashboard/api/gone": 404} {
		r, _ := http.NewRequest("GET", srv.URL+path, nil)
		r.Header.Set("Authorization", "Bearer "+e.secret)
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want || !strings.Contains(string(b), `"status":`+strconv.Itoa(want)) {
			t.Errorf("GET %s after 103: %d %q, want %d with an Error body", path, res.StatusCode, b, want)
		}
		if line := `"path":"` + path + `","status":` + strconv.Itoa(want); !strings.Contains(logs.String(), line) {
			t.Errorf("access log lacks %s:\n%s", line, logs)
		}
	}
	// A 304 after a 103 spends only the conditional allowance, ten times
	// the Free plan's 60, which its X-RateLimit-Limit describes.
	r, _ := http.NewRequest("GET", srv.URL+"/dashboard/api/page", nil)
	r.Header.Set("Authorization", "Bearer "+e.secret)
	r.Header.Set("If-None-Match", `"v1"`)
	res, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotModified || res.Header.Get("X-RateLimit-Limit") != "600" {
		t.Errorf("conditional request answered 304 after a 103: %d, X-RateLimit-Limit %q; want 304 on the allowance of 600", res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
	}
}
