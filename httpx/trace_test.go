package httpx_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/ratelimit"
)

// traceStore is what the traced API runs on.
type traceStore interface {
	petstore.Store
	petstore.IdempotencyStore
	petstore.OrderStore
}

// TestTraces makes real requests through the API, on the memory store and
// on SQLite, and reads the spans an OpenTelemetry SDK recorded: one server
// span per request named after its route, joined to the caller's trace,
// with a child span per port it called.
func TestTraces(t *testing.T) {
	stores := map[string]func(t *testing.T) traceStore{
		"memstore": func(*testing.T) traceStore { return memstore.New() },
		"bunstore-sqlite": func(t *testing.T) traceStore {
			db, err := bunstore.OpenMemory()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := bunstore.Migrate(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			return bunstore.New(db)
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			keys := petstore.NewKeys(store)
			key, secret, err := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			h, err := httpx.New(httpx.Config{
				Service:        petstore.NewService(store),
				Auth:           keys,
				Limiter:        ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{}),
				Idempotency:    store,
				Orders:         petstore.NewOrderService(store),
				TracerProvider: tp,
			})
			if err != nil {
				t.Fatal(err)
			}
			serve := func(method, target, body string, header map[string]string) (int, sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
				t.Helper()
				before := len(rec.Ended())
				r := apitest.AuthedReq(secret, method, target, body)
				for k, v := range header {
					r.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				spans := rec.Ended()[before:]
				var server sdktrace.ReadOnlySpan
				var children []sdktrace.ReadOnlySpan
				for _, s := range spans {
					if s.SpanKind().String() == "server" {
						if server != nil {
							t.Fatalf("%s %s: two server spans", method, target)
						}
						server = s
					}
				}
				if server == nil {
					t.Fatalf("%s %s: no server span among %d", method, target, len(spans))
				}
				for _, s := range spans {
					if s == server || s.Name() == "IdempotencyStore.Purge" {
						continue // the hourly purge runs beside the request, and ends when it does
					}
					// The creation inside an Idempotency-Key's CreateOnce
					// is its child: it runs in the record's transaction.
					if s.Parent().SpanID() != server.SpanContext().SpanID() && !insideCreateOnce(spans, s) {
						t.Errorf("%s %s: span %q is not a child of the request's span", method, target, s.Name())
					}
					children = append(children, s)
				}
				return w.Code, server, children
			}

			// A list, joined to the caller's trace.
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			code, server, children := serve("GET", "/v1/pets?limit=5&status=sold", "", map[string]string{
				"Traceparent": "00-" + traceID + "-00f067aa0ba902b7-01",
			})
			if code != http.StatusOK {
				t.Fatalf("list: %d", code)
			}
			if got := server.SpanContext().TraceID().String(); got != traceID {
				t.Errorf("list span's trace = %s, want the caller's %s", got, traceID)
			}
			wantSpan(t, server, "GET /v1/pets", map[string]string{
				"http.route": "/v1/pets", "http.request.method": "GET", "http.response.status_code": "200",
				"url.path": "/v1/pets", "petstore.key.id": key.ID,
			})
			for k := range attrs(server) {
				if strings.Contains(k, "query") {
					t.Errorf("the request span records %s: a query may hold secrets", k)
				}
			}
			wantChildren(t, children, "Authenticator.Authenticate", "RateLimiter.Decide", "PetService.ListPets")
			wantSpan(t, find(children, "RateLimiter.Decide"), "RateLimiter.Decide", map[string]string{
				"petstore.ratelimit.result": "allowed", "petstore.ratelimit.subject": "key",
			})
			wantSpan(t, find(children, "PetService.ListPets"), "PetService.ListPets", map[string]string{
				"petstore.page.limit": "5", "petstore.page.status": "sold", "petstore.result.count": "0",
			})
			if got := find(children, "Authenticator.Authenticate"); strings.Contains(spanText(got), secret) {
				t.Error("the authentication span holds the token")
			}

			// A create with an Idempotency-Key: the store's write inside
			// the record's CreateOnce; the first create of the hour also
			// starts a purge of expired records, beside it.
			code, server, children = serve("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`, map[string]string{"Idempotency-Key": "trace-1"})
			if code != http.StatusCreated {
				t.Fatalf("create: %d", code)
			}
			wantSpan(t, server, "POST /v1/pets", map[string]string{"http.response.status_code": "201"})
			wantChildren(t, children, "Authenticator.Authenticate", "RateLimiter.Decide",
				"PetService.CreatePet", "IdempotencyStore.CreateOnce")
			for purged, deadline := false, time.Now().Add(10*time.Second); !purged; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no IdempotencyStore.Purge span, child of the create's, within 10 s")
				}
				for _, s := range rec.Ended() {
					purged = purged || s.Name() == "IdempotencyStore.Purge" && s.Parent().SpanID() == server.SpanContext().SpanID()
				}
			}
			if create := find(children, "PetService.CreatePet"); create.Parent().SpanID() != find(children, "IdempotencyStore.CreateOnce").SpanContext().SpanID() {
				t.Error("the creation is not a child of IdempotencyStore.CreateOnce")
			}

			// A missing pet: the route with its placeholder, never the id; a
			// client's 404 is no span error.
			code, server, children = serve("GET", "/v1/pets/987654", "", nil)
			if code != http.StatusNotFound {
				t.Fatalf("get: %d", code)
			}
			wantSpan(t, server, "GET /v1/pets/{petId}", map[string]string{"http.route": "/v1/pets/{petId}", "http.response.status_code": "404"})
			get := find(children, "PetService.GetPet")
			wantSpan(t, get, "PetService.GetPet", map[string]string{"petstore.pet.id": "987654", "petstore.error.code": "not_found"})
			if server.Status().Code == codes.Error || get.Status().Code == codes.Error {
				t.Error("a 404 marked the spans as errors")
			}

			// A wrong key: 401, still named after the route it asked for.
			r := httptest.NewRequest("GET", "/v1/pets", nil)
			r.Header.Set("Authorization", "Bearer wrong")
			before := len(rec.Ended())
			h.ServeHTTP(httptest.NewRecorder(), r)
			var named bool
			for _, s := range rec.Ended()[before:] {
				named = named || s.Name() == "GET /v1/pets" && attrs(s)["http.response.status_code"] == "401"
			}
			if !named {
				t.Error("a 401 has no span named GET /v1/pets with status 401")
			}

			// A method HTTP does not define: _OTHER, and a span named
			// HTTP, whatever the client sent.
			_, server, _ = serve("INVENTED-1", "/v1/store/orders", "", nil)
			if n := server.Name(); n != "HTTP" && !strings.HasPrefix(n, "HTTP ") || attrs(server)["http.request.method"] != "_OTHER" {
				t.Errorf("an invented method's span: %q, method %q; want HTTP and _OTHER", n, attrs(server)["http.request.method"])
			}
		})
	}
}

// TestNoTracerProviderNoSpans: without a provider nothing is recorded, even
// with a provider elsewhere in the process.
func TestNoTracerProviderNoSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	_ = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, nil)
	if res := e.do(t, e.req("GET", "/v1/pets", "")); res.Status != http.StatusOK {
		t.Fatalf("status %d", res.Status)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded without Config.TracerProvider", n)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

func spanText(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name())
	for _, kv := range s.Attributes() {
		b.WriteString(" " + string(kv.Key) + "=" + kv.Value.String())
	}
	return b.String()
}

func find(spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

func wantSpan(t *testing.T, s sdktrace.ReadOnlySpan, name string, want map[string]string) {
	t.Helper()
	if s == nil {
		t.Fatalf("no span %q", name)
	}
	if s.Name() != name {
		t.Errorf("span name %q, want %q", s.Name(), name)
	}
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q", name, k, got[k], v)
		}
	}
}

// insideCreateOnce reports whether s is a child of an
// IdempotencyStore.CreateOnce span among spans.
func insideCreateOnce(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) bool {
	for _, p := range spans {
		if p.Name() == "IdempotencyStore.CreateOnce" && p.SpanContext().SpanID() == s.Parent().SpanID() {
			return true
		}
	}
	return false
}

func wantChildren(t *testing.T, spans []sdktrace.ReadOnlySpan, names ...string) {
	t.Helper()
	var got []string
	for _, s := range spans {
		got = append(got, s.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("child spans (in the order they ended) = %v, want %v", got, names)
	}
}

// downKeys is a key store that cannot answer: every lookup is unavailable.
type downKeys struct{}

func (downKeys) Authenticate(context.Context, string) (petstore.APIKey, error) {
	return petstore.APIKey{}, petstore.Errorf(petstore.CodeUnavailable, "the key store is unavailable")
}

// estimateOnly is a limiter that can estimate (httpx.Estimator) but not
// refund: a user's own, say.
type estimateOnly struct{ l *ratelimit.Limiter }

func (e estimateOnly) Decide(ctx context.Context, subject string, lim petstore.Limits) (ratelimit.Decision, error) {
	return e.l.Decide(ctx, subject, lim)
}

func (e estimateOnly) Estimate(subject string, lim petstore.Limits) ratelimit.Decision {
	return e.l.Estimate(subject, lim)
}

// A key the key store could not check is 503, charged to nobody, and
// still carries the rate-limit headers: its address's budget of wrong
// keys, as a wrong key's 401 would report it, less nothing; traced or
// not, and from a limiter that estimates without refunding too.
func TestKeyStoreDownReportsTheAddressBudget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		traced, refund bool
	}{{"untraced", false, true}, {"traced", true, true}, {"traced, estimating only", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
			wrong := do(t, e.h, "/v1", apitest.AuthedReq("psk_wrong", "GET", "/v1/pets", "")) // spends 1 of the address's 60
			wantStatus(t, wrong, 401, petstore.CodeUnauthorized)
			var lim httpx.RateLimiter = e.limiter
			if !tc.refund {
				lim = estimateOnly{e.limiter}
			}
			cfg := httpx.Config{Service: petstore.NewService(e.pets), Auth: downKeys{}, Limiter: lim, IETFRateLimitHeaders: true}
			if tc.traced {
				cfg.TracerProvider = sdktrace.NewTracerProvider()
			}
			h, err := httpx.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				res := do(t, h, "/v1", e.req("GET", "/v1/pets", ""))
				wantStatus(t, res, 503, petstore.CodeUnavailable)
				wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59",
					"X-RateLimit-Reset": unix(time.Minute), "Retry-After": "2"})
			}
		})
	}
}
