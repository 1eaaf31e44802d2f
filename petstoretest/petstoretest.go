// Package petstoretest runs a whole Petstore inside a test, the way
// net/http/httptest runs one handler: the real /v1 API (the same httpx
// handler as production, with validation, authentication, rate limits and
// deprecation headers) over an in-memory store, on a loopback port or with
// no network at all.
//
// A fake is stateful (a pet created through it shows up in later lists),
// can be seeded and reset between tests, logs every request for
// assertions, and fails on demand: the next N requests, or those matching
// a route, answer with a chosen status or Error, after a latency, or with
// a dropped connection.
//
//	srv := petstoretest.NewServer(t, petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
//	pets, err := myapp.Available(ctx, srv.Client())
//
// Every Server is independent, so parallel tests each start their own.
package petstoretest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/ratelimit"
)

// BasePath is where the fake serves the API, as production does.
const BasePath = "/v1"

// noListenerHost is the host of URL in no-listener mode. The .test TLD is
// reserved (RFC 2606), so the name can never reach a real server.
const noListenerHost = "petstore.test"

// Server is a running fake petstore.
type Server struct {
	// URL is the base URL of the API, ending in /v1: what client.New
	// takes. In no-listener mode its host is petstore.test, reachable only
	// through HTTPClient and Client.
	URL string

	tb      testing.TB
	cfg     config
	store   petstore.Store
	keys    *petstore.Keys
	secret  string
	apiKey  petstore.APIKey
	limiter *swapLimiter
	handler http.Handler // the recording, fault-injecting front of the API
	ts      *httptest.Server
	rt      http.RoundTripper

	mu     sync.Mutex
	log    []*Request // in arrival order; Status set when the request ends
	faults []*fault

	closed    chan struct{} // closed by Close: ends Latency waits
	closeOnce sync.Once
}

type config struct {
	pets       []petstore.NewPet
	orders     []petstore.NewOrder
	plan       petstore.Plan
	limits     petstore.Limits
	noLimits   bool
	ban        ratelimit.BanPolicy
	store      petstore.Store
	noListener bool
	now        func() time.Time
	clock      bool // now is WithClock's: it dates the answers too
	logger     *slog.Logger
}

// Option configures a Server.
type Option func(*config)

// WithPets seeds the store with pets, created in order (so with the
// default store they get ids 1, 2, ...), and again after every Reset.
// An invalid pet fails the test.
func WithPets(pets ...petstore.NewPet) Option {
	return func(c *config) { c.pets = append(c.pets, pets...) }
}

// WithOrders seeds the server key's project with store orders (beta),
// placed in order after the WithPets pets and again after every Reset. An
// invalid order (one whose pet does not exist among them) fails the test.
// The store must implement petstore.OrderStore, as the default one does.
func WithOrders(orders ...petstore.NewOrder) Option {
	return func(c *config) { c.orders = append(c.orders, orders...) }
}

// WithPlan sets the plan of the server's key and so its rate limits
// (default Pro: 300 a minute, 10,000 a day).
func WithPlan(p petstore.Plan) Option {
	return func(c *config) { c.plan, c.limits = p, petstore.Limits{} }
}

// WithLimits gives the server's key custom limits (an Enterprise key), so
// a test can reach 429 in a few requests: WithLimits(petstore.Limits{PerMinute: 2, PerDay: 100}).
func WithLimits(l petstore.Limits) Option {
	return func(c *config) { c.plan, c.limits = petstore.PlanEnterprise, l }
}

// WithoutRateLimits turns rate limiting off: no 429s and no rate-limit
// headers.
func WithoutRateLimits() Option { return func(c *config) { c.noLimits = true } }

// WithBanPolicy sets when repeated 429s ban the key (default:
// ratelimit.DefaultBanPolicy, the spec's: more than 30 strikes within a
// minute ban it for 15 minutes, where refusals within 1 s after the first
// of a strike window are no strikes).
func WithBanPolicy(p ratelimit.BanPolicy) Option { return func(c *config) { c.ban = p } }

// WithStore serves a store of the caller's choice instead of a new memory
// store, for example a bunstore on SQLite. If it implements
// petstore.IdempotencyStore, Idempotency-Key replay uses it too.
func WithStore(s petstore.Store) Option { return func(c *config) { c.store = s } }

// WithoutListener serves through an in-memory http.RoundTripper instead
// of a loopback port: no sockets and no goroutines, so the fake works
// inside a testing/synctest bubble. Use HTTPClient or Client to reach it.
// A request with an Expect other than 100-continue gets 417 Expectation
// Failed, as from Go's server, and never reaches the API or the request
// log.
func WithoutListener() Option { return func(c *config) { c.noListener = true } }

// WithClock sets the clock of the rate limiter and of the response headers
// (Date, Retry-After, X-RateLimit-Reset), so a test can move past a window
// without waiting: give the client the same clock (client.WithClock),
// which reads the waits an answer asks for against its Date.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now, c.clock = now, true }
}

// WithLogger sets the logger of the API's logs (default: discard): a
// "request" line for each request the API handles, as docs/operating.md
// describes. A request a Fault fails never reaches the API, or its answer
// is replaced (Fault.After); the fake logs a "fault injected" line for it
// instead, at Info, with its method, path, the status the client got (0
// when the connection was dropped or the client left during a Latency)
// and after=true for an After fault, whose request the API logged too.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// NewServer starts a fake petstore and stops it when the test ends.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	cfg := config{plan: petstore.PlanPro, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{tb: tb, cfg: cfg, store: cfg.store, limiter: &swapLimiter{}, closed: make(chan struct{})}
	if s.store == nil {
		s.store = memstore.New()
	}
	s.keys = petstore.NewKeys(s.store)
	key, secret, err := s.keys.Create(context.Background(), "", cfg.plan, cfg.limits)
	if err != nil {
		tb.Fatalf("petstoretest: creating the API key: %v", err)
	}
	s.apiKey, s.secret = key, secret
	s.limiter.reset(cfg)

	hcfg := httpx.Config{
		Service: petstore.NewService(s.store),
		Auth:    s.keys,
		Logger:  cfg.logger,
		Now:     cfg.now,
	}
	if !cfg.noLimits {
		hcfg.Limiter = s.limiter
	}
	configureIdempotency(&hcfg, s.store)
	if ob, ok := s.store.(petstore.OrderBackend); ok {
		hcfg.Orders = petstore.NewOrderService(ob)
	}
	api, err := httpx.New(hcfg)
	if err != nil {
		tb.Fatalf("petstoretest: %v", err)
	}
	s.handler = s.front(apiPaths(api))
	s.seed()

	if cfg.noListener {
		s.rt = memTransport{h: s.handler, closed: s.closed}
		s.URL = "http://" + noListenerHost + BasePath
	} else {
		s.ts = httptest.NewServer(s.handler)
		s.rt = s.ts.Client().Transport
		s.URL = s.ts.URL + BasePath
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server and closes its connections. A request held by
// a Latency fault then ends at once, as a dropped connection, rather than
// keeping Close waiting. Every later request through HTTPClient or Client
// fails, in no-listener mode too, as a dial to a closed port does: with
// a *net.OpError wrapping syscall.ECONNREFUSED, and is not logged. The
// test's cleanup calls it; calling it again does nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.ts != nil {
			s.ts.Close()
		}
	})
}

// Key returns the secret API key the fake accepts. It is random per
// server; never log it in real code either.
func (s *Server) Key() string { return s.secret }

// APIKey returns the stored form of the key: its id, plan and limits.
func (s *Server) APIKey() petstore.APIKey { return s.apiKey }

// Store returns the store behind the fake, to arrange state directly.
func (s *Server) Store() petstore.Store { return s.store }

// Handler returns the fake's whole handler (request log and faults
// included), for mounting it elsewhere.
func (s *Server) Handler() http.Handler { return s.handler }

// HTTPClient returns an *http.Client that reaches the fake: through the
// loopback port, or in memory in no-listener mode.
func (s *Server) HTTPClient() *http.Client { return &http.Client{Transport: s.rt} }

// Client returns a petstore client for the fake, authenticated with Key,
// that reaches it through HTTPClient. opts are applied after that, so they
// can override it; a test using WithClock passes the same clock with
// client.WithClock so that the client's waits advance it.
func (s *Server) Client(opts ...client.Option) *client.Client {
	all := append([]client.Option{client.WithHTTPClient(s.HTTPClient())}, opts...)
	c, err := client.New(s.URL, s.secret, all...)
	if err != nil {
		s.tb.Fatalf("petstoretest: %v", err)
	}
	return c
}

// Pets returns every pet in the store, in ascending id order.
func (s *Server) Pets() []petstore.Pet {
	pets := []petstore.Pet{}
	var after int64
	for {
		page, err := s.store.ListPets(context.Background(), petstore.PetQuery{AfterID: after, Limit: 1000})
		if err != nil {
			s.tb.Errorf("petstoretest: listing pets: %v", err)
			return pets
		}
		pets = append(pets, page...)
		if len(page) < 1000 {
			return pets
		}
		after = page[len(page)-1].ID
	}
}

// Reset returns the fake to its starting state: it forgets logged
// requests, faults, rate-limit counters and Idempotency-Keys, and, for the
// default memory store (or any store with a Reset method), removes every
// pet and order, restarts ids at 1 and seeds the WithPets pets and
// WithOrders orders again. The key stays: valid, and on its starting
// plan and limits, even if the test revoked it or changed its plan
// through Store, or the store's Reset deleted it.
func (s *Server) Reset() {
	s.mu.Lock()
	s.log, s.faults = nil, nil
	s.mu.Unlock()
	s.limiter.reset(s.cfg)
	// The store's own Reset goes first: one that deletes keys too would
	// otherwise delete the key just restored.
	r, resets := s.store.(interface{ Reset() })
	if resets {
		r.Reset()
	}
	ctx := context.Background()
	if _, err := s.keys.Unrevoke(ctx, s.apiKey.ID); err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound {
		s.tb.Errorf("petstoretest: reinstating the API key: %v", err)
	}
	_, err := s.keys.SetPlan(ctx, s.apiKey.ID, s.apiKey.Plan, s.apiKey.Limits)
	if petstore.ErrorCode(err) == petstore.CodeNotFound {
		// Gone altogether (the store's Reset deleted it): stored again,
		// with its id, project and secret.
		err = s.store.CreateKey(ctx, s.apiKey, petstore.HashAPIKey(s.secret))
	}
	if err != nil {
		s.tb.Errorf("petstoretest: restoring the API key: %v", err)
	}
	if resets {
		s.seed()
	}
	if is, ok := s.store.(petstore.IdempotencyStore); ok {
		if _, err := is.PurgeIdempotencyKeys(context.Background(), time.Now().Add(100*365*24*time.Hour)); err != nil {
			s.tb.Errorf("petstoretest: purging idempotency keys: %v", err)
		}
	}
}

func (s *Server) seed() {
	svc := petstore.NewService(s.store)
	for _, p := range s.cfg.pets {
		if _, err := svc.CreatePet(context.Background(), p); err != nil {
			s.tb.Fatalf("petstoretest: seeding %+v: %v", p, err)
		}
	}
	if len(s.cfg.orders) > 0 {
		s.SeedOrders(s.cfg.orders...)
	}
}

// SeedOrders places store orders (beta) for the server key's project, as
// POST /store/orders would (defaults applied, the pet checked), and
// returns them. An invalid order fails the test, as does a store that
// does not implement petstore.OrderStore.
func (s *Server) SeedOrders(orders ...petstore.NewOrder) []petstore.Order {
	s.tb.Helper()
	ob, ok := s.store.(petstore.OrderBackend)
	if !ok {
		s.tb.Fatalf("petstoretest: the store %T does not implement petstore.OrderStore", s.store)
	}
	svc := petstore.NewOrderService(ob)
	out := make([]petstore.Order, 0, len(orders))
	for _, o := range orders {
		got, err := svc.CreateOrder(context.Background(), s.apiKey.ProjectID, o)
		if err != nil {
			s.tb.Fatalf("petstoretest: seeding order %+v: %v", o, err)
		}
		out = append(out, got)
	}
	return out
}

// Orders returns every store order of the server key's project, in
// ascending id order; none when the store keeps no orders.
func (s *Server) Orders() []petstore.Order {
	orders := []petstore.Order{}
	os, ok := s.store.(petstore.OrderStore)
	if !ok {
		return orders
	}
	var after int64
	for {
		page, err := os.ListOrders(context.Background(), petstore.OrderQuery{ProjectID: s.apiKey.ProjectID, AfterID: after, Limit: 1000})
		if err != nil {
			s.tb.Errorf("petstoretest: listing orders: %v", err)
			return orders
		}
		orders = append(orders, page...)
		if len(page) < 1000 {
			return orders
		}
		after = page[len(page)-1].ID
	}
}

// apiPaths serves the API as examples/server does: it hands the API its
// paths, everything under BasePath and the paths around it that an
// http.ServeMux would redirect with an HTML body (BasePath itself, paths
// that are not clean), so that they get the API's JSON 404 naming the
// path to write; every other path gets a JSON 404 too. A ServeMux would
// redirect "/v1//pets" to "/v1/pets", where a client following redirects
// would get pets the real server never serves at that path.
func apiPaths(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if c := path.Clean(p); strings.HasPrefix(p, BasePath+"/") || c == BasePath || strings.HasPrefix(c, BasePath+"/") {
			api.ServeHTTP(w, r)
			return
		}
		if len(p) > 200 {
			p = p[:200] + "…"
		}
		httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s; the API is under %s/, such as %s/pets", p, BasePath, BasePath))
	})
}

// swapLimiter lets Reset replace the limiter, and its counters, under a
// handler that is already built.
type swapLimiter struct {
	p atomic.Pointer[ratelimit.Limiter]
}

func (l *swapLimiter) reset(cfg config) {
	l.p.Store(ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: cfg.now, BanPolicy: cfg.ban}))
}

// Decide implements httpx.RateLimiter.
func (l *swapLimiter) Decide(ctx context.Context, subject string, limits petstore.Limits) (ratelimit.Decision, error) {
	return l.p.Load().Decide(ctx, subject, limits)
}
