package httpx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
)

// Mount the whole /v1 API on a standard library ServeMux, next to routes
// of your own.
func ExampleNew() {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, _ := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})

	api, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)

	r := httptest.NewRequest("GET", "/v1/pets", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())
	// Output: 200 []
}

// Mount the API under a prefix of your own: set BasePath to the full
// path, and Location and Link headers follow it.
func ExampleNew_prefix() {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, _ := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})

	api, _ := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys, BasePath: "/api/v1"})
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", api)

	r := httptest.NewRequest("POST", "/api/v1/pets", strings.NewReader(`{"name":"Rex","categoryId":1}`))
	r.Header.Set("Authorization", "Bearer "+secret)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("Location"))
	// Output: 201 /api/v1/pets/1
}

// Mount the API on chi.
func ExampleNew_chi() {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	api, _ := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys})

	router := chi.NewRouter()
	router.Mount("/v1", api)

	w := httptest.NewRecorder()
	router.ServeHTTP(w, httptest.NewRequest("GET", "/v1/pets", nil))
	fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"))
	// Output: 401 Bearer realm="petstore"
}

// Put another API behind the same authentication, rate limits, request
// ids and Error bodies.
func ExampleWrap() {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, _ := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /dashboard/api/me", func(w http.ResponseWriter, r *http.Request) {
		key, _ := httpx.KeyFromContext(r.Context())
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"plan": string(key.Plan)})
	})
	h, _ := httpx.Wrap(httpx.Config{Auth: keys}, mux)

	r := httptest.NewRequest("GET", "/dashboard/api/me", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output: 200 {"plan":"pro"}
}
