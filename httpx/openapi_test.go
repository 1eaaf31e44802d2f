package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/httpx/dashboard"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/ratelimit"
)

// TestOpenAPIServerPerBase builds handlers on several bases at once, twice
// each, and checks that each serves the document with its own base as the
// first server: the rendered documents are cached per base, and the cache
// must not hand one base's document to another.
func TestOpenAPIServerPerBase(t *testing.T) {
	store := memstore.New()
	bases := []struct{ base, path, server string }{
		{"", "/v1/openapi.json", "/v1"},
		{"/v1", "/v1/openapi.json", "/v1"},
		{"/api/v1/", "/api/v1/openapi.json", "/api/v1"},
		{"/", "/openapi.json", "/"},
		{"/cache-test/β", "/cache-test/β/openapi.json", "/cache-test/β"},
	}
	type built struct {
		h                  http.Handler
		base, path, server string
	}
	var (
		mu sync.Mutex
		hs []built
		wg sync.WaitGroup
	)
	for range 2 {
		for _, b := range bases {
			wg.Go(func() {
				h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), BasePath: b.base})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				hs = append(hs, built{h, b.base, b.path, b.server})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for _, b := range hs {
		t.Run(fmt.Sprintf("base %q", b.base), func(t *testing.T) {
			rec := httptest.NewRecorder()
			b.h.ServeHTTP(rec, httptest.NewRequest("GET", b.path, nil))
			if rec.Code != 200 {
				t.Fatalf("GET %s: %d %s", b.path, rec.Code, rec.Body)
			}
			var doc struct {
				Servers []struct{ URL string } `json:"servers"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Servers) != 3 || doc.Servers[0].URL != b.server {
				t.Fatalf("servers = %+v, want %q first, then production and staging", doc.Servers, b.server)
			}
		})
	}
}

// BenchmarkNew measures building the /v1 handler, which servers and test
// helpers (petstoretest) do once per server or per test:
//
//	go test -run x -bench New -benchmem ./httpx
func BenchmarkNew(b *testing.B) {
	store := memstore.New()
	cfg := httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store)}
	for b.Loop() {
		if _, err := httpx.New(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// The OpenAPI document is served whole, with one of the statuses it
// lists for itself: Range and If-Match, which a plain file server would
// honour (206, 416, 412), are ignored.
func TestOpenAPIDocumentIsServedWhole(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	whole := do(t, e.h, "/v1", httptest.NewRequest("GET", "/v1/openapi.json", nil))
	wantStatus(t, whole, http.StatusOK, "")
	for _, h := range [][2]string{
		{"Range", "bytes=0-10"},
		{"Range", "bytes=999999-"},
		{"If-Match", `"nope"`},
		{"If-Unmodified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"},
	} {
		r := httptest.NewRequest("GET", "/v1/openapi.json", nil)
		r.Header.Set(h[0], h[1])
		res := do(t, e.h, "/v1", r)
		if res.Status != http.StatusOK || !bytes.Equal(res.Body, whole.Body) {
			t.Fatalf("with %s: %s: %d and %d bytes; want 200 and the whole document (%d bytes)", h[0], h[1], res.Status, len(res.Body), len(whole.Body))
		}
	}
}

// TestOpenAPINotModifiedDeclaresItsHeaders: the 304 of an OpenAPI
// document keeps the 200's Cache-Control (RFC 9111 §4.3.4), and each
// document, /v1's and the dashboard's, declares it for the 304 too.
func TestOpenAPINotModifiedDeclaresItsHeaders(t *testing.T) {
	store := memstore.New()
	dash, err := dashboard.New(dashboard.Config{Engine: domaintest.New(t, domaintest.Options{Store: store}).Engine, Auth: petstore.NewKeys(store)})
	if err != nil {
		t.Fatal(err)
	}
	api := newRLEnv(t, ratelimit.NewMemoryStore(), nil).h
	for _, tc := range []struct {
		h    http.Handler
		path string
	}{{api, "/v1/openapi.json"}, {dash, "/dashboard/api/openapi.json"}} {
		router := apitest.DocumentRouter(t, tc.path, func() http.Handler { return tc.h })
		full, _ := serve(tc.h, httptest.NewRequest("GET", tc.path, nil))
		req := func() *http.Request {
			r := httptest.NewRequest("GET", tc.path, nil)
			r.Header.Set("If-None-Match", full.Header.Get("ETag"))
			return r
		}
		res, _ := serve(tc.h, req())
		if res.Status != http.StatusNotModified || res.Header.Get("Cache-Control") != full.Header.Get("Cache-Control") {
			t.Fatalf("%s: %d with Cache-Control %q, want 304 with the 200's %q", tc.path, res.Status, res.Header.Get("Cache-Control"), full.Header.Get("Cache-Control"))
		}
		if u := undeclaredHeaders(t, router, req(), res); len(u) > 0 {
			t.Errorf("%s: the 304 carries %v, which the document does not declare", tc.path, u)
		}
	}
}

// A handler without Config.Idempotency ignores Idempotency-Key, so the
// document it serves must not offer it: a client that read it would
// retry creates believing them safe, and make a pet per retry. With a
// store, the parameter and the answers that come of it are there.
func TestOpenAPIOffersIdempotencyKeyOnlyWithAStore(t *testing.T) {
	for _, withStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("store %v", withStore), func(t *testing.T) {
			store := memstore.New()
			cfg := httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), Orders: petstore.NewOrderService(store)}
			if withStore {
				cfg.Idempotency = store
			}
			h, err := httpx.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/openapi.json", nil))
			loaded, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
			if err == nil {
				err = loaded.Validate(context.Background())
			}
			if err != nil {
				t.Fatalf("the served document is not valid: %v", err)
			}
			var doc struct {
				Info  struct{ Description string }
				Paths map[string]map[string]struct {
					Description string
					Parameters  []struct {
						Ref string `json:"$ref"`
					}
					Responses map[string]struct {
						Headers map[string]any
					}
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			// The extensions' list names every operation that takes a key.
			named := strings.Contains(doc.Info.Description, "`Idempotency-Key` on createPet and createOrder;")
			if named != withStore || !withStore && strings.Contains(doc.Info.Description, "Idempotency-Key") {
				t.Errorf("info.description names Idempotency-Key on both creates: %v, want %v:\n%s", named, withStore, doc.Info.Description)
			}
			for _, path := range []string{"/pets", "/store/orders"} {
				op := doc.Paths[path]["post"]
				_, replayed := op.Responses["201"].Headers["Idempotent-Replayed"]
				_, reused := op.Responses["422"]
				offered := len(op.Parameters) > 0 || replayed || reused || bytes.Contains([]byte(op.Description), []byte("Idempotency-Key"))
				if offered != withStore {
					t.Fatalf("POST %s: parameters %v, Idempotent-Replayed %v, 422 %v, description %q; want Idempotency-Key offered: %v",
						path, op.Parameters, replayed, reused, op.Description, withStore)
				}
			}
		})
	}
}

// A handler without Config.Orders serves no store orders, so its
// document neither lists their paths nor describes them.
func TestOpenAPIWithoutOrdersDescribesNone(t *testing.T) {
	for _, withKeys := range []bool{false, true} {
		store := memstore.New()
		cfg := httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store)}
		if withKeys {
			cfg.Idempotency = store
		}
		h, err := httpx.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/openapi.json", nil))
		var doc struct {
			Info  struct{ Description string }
			Paths map[string]any
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		for p := range doc.Paths {
			if strings.HasPrefix(p, "/store/") {
				t.Errorf("idempotency %v: the document lists %s", withKeys, p)
			}
		}
		if d := doc.Info.Description; strings.Contains(d, "createOrder") || strings.Contains(d, "Store orders") {
			t.Errorf("idempotency %v: info.description describes store orders:\n%s", withKeys, d)
		}
		if want := "`Idempotency-Key` on createPet;"; withKeys != strings.Contains(doc.Info.Description, want) {
			t.Errorf("idempotency %v: info.description names %s: %v", withKeys, want, !withKeys)
		}
	}
}
