// Command embed shows the Petstore API mounted inside a server that
// already exists: next to the owner's own routes, under the owner's own
// middleware, at /api/v1 instead of /v1. It does so on the standard
// library's ServeMux and on chi:
//
//	go run ./examples/embed -router std   # or -router chi
//
// It prints a key to try with curl:
//
//	curl -H "Authorization: Bearer $KEY" localhost:8080/api/v1/pets
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/ratelimit"
)

// APIBase is where this server mounts the pets API.
const APIBase = "/api/v1"

// Shop is the owner's existing application: a home page, a health check,
// and a middleware that stamps and counts every response. The pets API is
// just another handler in it.
type Shop struct {
	served atomic.Int64
}

// Middleware is the owner's own: it runs for the API's requests too.
func (s *Shop) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.served.Add(1)
		w.Header().Set("X-Served-By", "shop")
		next.ServeHTTP(w, r)
	})
}

func (s *Shop) home(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "Welcome to the shop. The pets API is at "+APIBase+".")
}

func (s *Shop) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "ok %d\n", s.served.Load())
}

// StdMux mounts the shop and the API on an http.ServeMux. The API handler
// gets the whole path: it is built with BasePath APIBase, so no
// http.StripPrefix is needed.
func (s *Shop) StdMux(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /healthz", s.health)
	mux.Handle(APIBase+"/", api)
	return s.Middleware(mux)
}

// ChiRouter mounts the shop and the API on chi.
func (s *Shop) ChiRouter(api http.Handler) http.Handler {
	r := chi.NewRouter()
	r.Use(s.Middleware)
	r.Get("/", s.home)
	r.Get("/healthz", s.health)
	r.Mount(APIBase, api)
	return r
}

// NewAPI builds the pets API over an in-memory store and returns it with
// a new Pro key's secret. Its rate limiter keeps counters in memory, which
// is right for one process (give several processes a limiter over
// adapters/redislimit); with it every API response carries the rate-limit
// headers the spec requires.
func NewAPI(ctx context.Context, logger *slog.Logger) (http.Handler, string, error) {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		return nil, "", err
	}
	api, err := httpx.New(httpx.Config{
		Service:  petstore.NewService(store),
		Auth:     keys,
		Logger:   logger,
		BasePath: APIBase,
		Limiter:  ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Logger: logger}),
		// A create retried with its Idempotency-Key (as client retries
		// them) replays the first answer instead of making a second pet.
		Idempotency: store,
		// The IETF draft's RateLimit-Policy and RateLimit too, for clients
		// that read them, besides the spec's X-RateLimit-*.
		IETFRateLimitHeaders: true,
	})
	return api, secret, err
}

// build returns the shop with the API mounted on router ("std" or "chi"),
// and the key to call the API with.
func build(ctx context.Context, router string, logs io.Writer) (http.Handler, string, error) {
	api, secret, err := NewAPI(ctx, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		return nil, "", err
	}
	shop := &Shop{}
	switch router {
	case "std":
		return shop.StdMux(api), secret, nil
	case "chi":
		return shop.ChiRouter(api), secret, nil
	}
	return nil, "", fmt.Errorf("-router must be std or chi, not %q", router)
}

func main() {
	addr := flag.String("addr", "localhost:8080", "listen address")
	router := flag.String("router", "std", "std (net/http ServeMux) or chi")
	flag.Parse()
	h, secret, err := build(context.Background(), *router, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The key is printed once, for trying the example; never log keys.
	fmt.Printf("try: curl -H 'Authorization: Bearer %s' %s\n", secret, tryURL(ln.Addr()))
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.Fatal(srv.Serve(ln))
}

// tryURL is the URL of the pets list on the listener at a, as curl can
// use it: the port the system chose for ":0", and localhost for an
// address that listens on every interface (":8080").
func tryURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + APIBase + "/pets"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + APIBase + "/pets"
}
