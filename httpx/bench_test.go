package httpx_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/keycache"
)

// BenchmarkHandler compares the full handler (keys authenticated through
// keycache as examples/server does, routing, validation, logging to a
// discard logger, memory store) with a bare net/http handler writing a
// fixed 20-pet body, in one run:
//
//	go test -run x -bench . -benchmem ./httpx
func BenchmarkHandler(b *testing.B) {
	e := newEnv(b, func(c *httpx.Config) {
		c.Logger = nil
		c.Auth = keycache.New(c.Auth, keycache.Config{})
	})
	for i := range 100 {
		e.seed(b, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: petstore.StatusAvailable})
	}
	fixed, _ := json.Marshal(e.store.Pets()[:20])
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixed)
	})
	b.Run("bare net/http 20 pets", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			bare.ServeHTTP(w, httptest.NewRequest("GET", "/v1/pets?limit=20", nil))
		}
	})
	b.Run("GET /pets?limit=20", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, e.req("GET", "/v1/pets?limit=20", ""))
			if w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	// The same with metrics on.
	withMetrics := newEnv(b, func(c *httpx.Config) {
		c.Logger = nil
		c.Auth = keycache.New(c.Auth, keycache.Config{})
		c.Metrics = prometheus.NewRegistry()
	})
	for i := range 100 {
		withMetrics.seed(b, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: petstore.StatusAvailable})
	}
	b.Run("GET /pets?limit=20 with metrics", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			withMetrics.h.ServeHTTP(w, withMetrics.req("GET", "/v1/pets?limit=20", ""))
			if w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("POST /pets", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Rex","categoryId":1,"status":"sold"}`))
			r.Header.Set("Authorization", "Bearer "+e.secret)
			r.Header.Set("Content-Type", "application/json")
			e.h.ServeHTTP(w, r)
			if w.Code != 201 {
				b.Fatal(w.Code)
			}
		}
	})
}
