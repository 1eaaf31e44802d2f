package httpx_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// These tests run the handler with the real ratelimit.Limiter, so what a
// client sees (status, code, headers) is what production sends. Time is a
// clock the test moves, so windows and bans end without sleeping. Every
// request goes through the contract test's do, so the OpenAPI document
// provably describes the headers and the 429s.

// t0 is a whole second, so that "now + 60 s" is exact in Unix seconds.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// clock is an injected time the test moves by hand: a limiter's, or a
// domain engine's.
func newClock() *testenv.Clock { return testenv.NewClock(t0) }

// rlEnv is one API with a real limiter over store, and one Free key.
type rlEnv struct {
	h       http.Handler
	pets    *memstore.Store
	keys    *petstore.Keys
	key     petstore.APIKey
	secret  string
	clock   *testenv.Clock
	limiter *ratelimit.Limiter
}

// newRLEnv builds the API on a fresh memory pet store. Config.Now is left
// unset on purpose: the seconds in the headers must come from the
// limiter's clock, the one its windows were measured with.
func newRLEnv(t testing.TB, store ratelimit.Store, mutate func(*httpx.Config, *ratelimit.Config)) *rlEnv {
	t.Helper()
	pets := memstore.New()
	keys := petstore.NewKeys(pets)
	key, secret, err := keys.Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpx.Config{Service: petstore.NewService(pets), Auth: keys, IETFRateLimitHeaders: true}
	clk := newClock()
	lcfg := ratelimit.Config{Clock: clk.Now, FailClosed: true}
	if mutate != nil {
		mutate(&cfg, &lcfg)
	}
	lim := ratelimit.New(store, lcfg)
	cfg.Limiter = lim
	h, err := httpx.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rlEnv{h: h, pets: pets, keys: keys, key: key, secret: secret, clock: clk, limiter: lim}
}

func (e *rlEnv) req(method, target, body string) *http.Request {
	return apitest.AuthedReq(e.secret, method, target, body)
}

func (e *rlEnv) get(t testing.TB) response {
	t.Helper()
	return do(t, e.h, "/v1", e.req("GET", "/v1/pets", ""))
}

// unix is t0 + d in Unix seconds, as the X-RateLimit-Reset header says it.
func unix(d time.Duration) string { return strconv.FormatInt(t0.Add(d).Unix(), 10) }

// wantHeaders fails unless every header has its value; "" means absent.
func wantHeaders(t testing.TB, res response, want map[string]string) {
	t.Helper()
	for h, v := range want {
		if got := res.Header.Get(h); got != v {
			t.Fatalf("%d %s: %s = %q, want %q", res.Status, res.Body, h, got, v)
		}
	}
}

// wantStatus fails unless res has the status and, for an error, the code.
func wantStatus(t testing.TB, res response, status int, code string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status = %d, want %d: %s", res.Status, status, res.Body)
	}
	if code != "" {
		if got := res.errorBody(t).Code; got != code {
			t.Fatalf("code = %q, want %q", got, code)
		}
	}
}

// retryAfter reads Retry-After in seconds.
func retryAfter(t testing.TB, res response) int64 {
	t.Helper()
	n, err := strconv.ParseInt(res.Header.Get("Retry-After"), 10, 64)
	if err != nil {
		t.Fatalf("Retry-After = %q: %v", res.Header.Get("Retry-After"), err)
	}
	return n
}

// freshFree is what a fresh Free subject's first response says at t0.
var freshFree = map[string]string{
	"X-RateLimit-Limit":     "60",
	"X-RateLimit-Remaining": "59",
	"X-RateLimit-Reset":     unix(time.Minute),
	"RateLimit-Policy":      `"minute";q=60;w=60, "day";q=1000;w=86400`,
	"RateLimit":             `"minute";r=59;t=60, "day";r=999;t=86400`,
	"Retry-After":           "",
}

func TestRateLimitHeadersOnEveryResponse(t *testing.T) {
	big := `{"name":"` + strings.Repeat("x", httpx.MaxBodyBytes) + `","categoryId":1}`
	tests := []struct {
		name   string
		req    func(e *rlEnv) *http.Request
		status int
		code   string
	}{
		{"200 list", func(e *rlEnv) *http.Request { return e.req("GET", "/v1/pets", "") }, 200, ""},
		{"201 create", func(e *rlEnv) *http.Request { return e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`) }, 201, ""},
		{"400 bad query", func(e *rlEnv) *http.Request { return e.req("GET", "/v1/pets?limit=0", "") }, 400, petstore.CodeInvalidRequest},
		{"401 no key", func(e *rlEnv) *http.Request { return httptest.NewRequest("GET", "/v1/pets", nil) }, 401, petstore.CodeUnauthorized},
		{"401 unknown key", func(e *rlEnv) *http.Request {
			r := httptest.NewRequest("GET", "/v1/pets", nil)
			r.Header.Set("Authorization", "Bearer psk_guess")
			return r
		}, 401, petstore.CodeUnauthorized},
		{"404 no such pet", func(e *rlEnv) *http.Request { return e.req("GET", "/v1/pets/999", "") }, 404, petstore.CodeNotFound},
		{"404 no such path", func(e *rlEnv) *http.Request { return e.req("GET", "/v1/nope", "") }, 404, petstore.CodeNotFound},
		{"405 wrong method", func(e *rlEnv) *http.Request { return e.req("DELETE", "/v1/pets", "") }, 405, petstore.CodeMethodNotAllowed},
		{"413 too large", func(e *rlEnv) *http.Request { return e.req("POST", "/v1/pets", big) }, 413, petstore.CodePayloadTooLarge},
		{"415 not JSON", func(e *rlEnv) *http.Request {
			r := e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, 415, petstore.CodeUnsupportedMediaType},
		{"200 openapi.json", func(e *rlEnv) *http.Request { return httptest.NewRequest("GET", "/v1/openapi.json", nil) }, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
			res := do(t, e.h, "/v1", tt.req(e))
			wantStatus(t, res, tt.status, tt.code)
			want := freshFree
			if tt.name == "200 openapi.json" {
				// Public documents spend the address's public budget.
				want = map[string]string{"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "599",
					"RateLimit-Policy": `"minute";q=600;w=60, "day";q=20000;w=86400`}
			}
			wantHeaders(t, res, want)
		})
	}
	t.Run("429 over the limit", func(t *testing.T) {
		e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
		for range 60 {
			wantStatus(t, e.get(t), 200, "")
		}
		e.clock.Advance(10 * time.Second)
		res := e.get(t)
		wantStatus(t, res, 429, petstore.CodeRateLimited)
		wantHeaders(t, res, map[string]string{
			"X-RateLimit-Limit":     "60",
			"X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset":     unix(time.Minute),
			"RateLimit-Policy":      `"minute";q=60;w=60, "day";q=1000;w=86400`,
			"RateLimit":             `"minute";r=0;t=50, "day";r=940;t=86390`,
			"Retry-After":           "50",
		})
	})
}

func TestRateLimitMinuteWindow(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	for i := range 60 {
		res := e.get(t)
		wantStatus(t, res, 200, "")
		wantHeaders(t, res, map[string]string{"X-RateLimit-Remaining": strconv.Itoa(59 - i), "X-RateLimit-Reset": unix(time.Minute)})
	}
	// Refusals at several points of the window: each tells the client to
	// wait exactly until the window's end, never less, and costs no quota.
	for _, at := range []time.Duration{0, 30 * time.Second, 59*time.Second + 500*time.Millisecond} {
		e.clock.Advance(at - e.clock.Now().Sub(t0))
		res := e.get(t)
		wantStatus(t, res, 429, petstore.CodeRateLimited)
		ra, reset := retryAfter(t, res), t0.Add(time.Minute)
		if left := reset.Sub(e.clock.Now()); ra < 1 || time.Duration(ra)*time.Second < left || ra > int64(left/time.Second)+1 {
			t.Fatalf("at +%v: Retry-After = %d, want the %v to the minute's reset, rounded up", at, ra, left)
		}
		wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(time.Minute)})
	}
	// After 60 s the minute starts over where the next request lands; the
	// three refusals cost no day quota: 60 admitted before, this one now.
	e.clock.Advance(t0.Add(time.Minute).Sub(e.clock.Now()))
	res := e.get(t)
	wantStatus(t, res, 200, "")
	wantHeaders(t, res, map[string]string{
		"X-RateLimit-Limit":     "60",
		"X-RateLimit-Remaining": "59",
		"X-RateLimit-Reset":     unix(2 * time.Minute),
		"RateLimit":             `"minute";r=59;t=60, "day";r=939;t=86340`,
	})
}

func TestRateLimitDayWindow(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	// 1,000 requests spread over the day, 50 a minute: the minute never
	// binds, the day runs out.
	for batch := range 20 {
		for range 50 {
			wantStatus(t, e.get(t), 200, "")
		}
		if batch < 19 {
			e.clock.Advance(time.Hour)
		}
	}
	e.clock.Advance(time.Minute)
	res := e.get(t)
	wantStatus(t, res, 429, petstore.CodeRateLimited)
	wantHeaders(t, res, map[string]string{
		"X-RateLimit-Limit":     "1000",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     unix(24 * time.Hour),
	})
	left := t0.Add(24 * time.Hour).Sub(e.clock.Now())
	if got, want := retryAfter(t, res), int64(left/time.Second); got != want {
		t.Fatalf("Retry-After = %d, want %d: the day's end, not the minute's", got, want)
	}
	// The day ends on time.
	e.clock.Advance(left)
	wantStatus(t, e.get(t), 200, "")
}

func TestRateLimitKeylessByAddress(t *testing.T) {
	proxy := netip.MustParsePrefix("10.0.0.0/8")
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) {
		c.TrustedProxies = []netip.Prefix{proxy}
	})
	keyless := func(remote string, xff ...string) *http.Request {
		r := httptest.NewRequest("GET", "/v1/pets", nil)
		r.RemoteAddr = remote
		for _, v := range xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		return r
	}
	const guesser = "203.0.113.9:5000"
	for i := range 60 {
		res := do(t, e.h, "/v1", keyless(guesser))
		wantStatus(t, res, 401, petstore.CodeUnauthorized)
		wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": strconv.Itoa(59 - i)})
	}
	tests := []struct {
		name      string
		req       *http.Request
		status    int
		code      string
		remaining string
	}{
		{"the same address is refused", keyless(guesser), 429, petstore.CodeRateLimited, "0"},
		{"a spoofed X-Forwarded-For from an untrusted peer gets no fresh bucket", keyless(guesser, "198.51.100.77"), 429, petstore.CodeRateLimited, "0"},
		{"the openapi document has a budget of its own", func() *http.Request {
			r := httptest.NewRequest("GET", "/v1/openapi.json", nil)
			r.RemoteAddr = guesser
			return r
		}(), 200, "", "599"},
		{"a trusted proxy forwarding that address is refused", keyless("10.1.1.1:80", "203.0.113.9"), 429, petstore.CodeRateLimited, "0"},
		{"another address has its own bucket", keyless("203.0.113.10:5000"), 401, petstore.CodeUnauthorized, "59"},
		{"a trusted proxy's client has its own bucket", keyless("10.1.1.1:80", "198.51.100.78"), 401, petstore.CodeUnauthorized, "59"},
		{"a valid key from another address is limited by key only", func() *http.Request {
			r := e.req("GET", "/v1/pets", "")
			r.RemoteAddr = "203.0.113.11:5000"
			return r
		}(), 200, "", "59"},
		// A valid key is decided by its own plan, whoever shares its
		// address: its window started fresh at the request above.
		{"a valid key from the refused address is limited by key only", func() *http.Request {
			r := e.req("GET", "/v1/pets", "")
			r.RemoteAddr = guesser
			return r
		}(), 200, "", "58"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, e.h, "/v1", tt.req)
			wantStatus(t, res, tt.status, tt.code)
			limit := "60"
			if tt.remaining == "599" {
				limit = "600"
			}
			wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": tt.remaining})
		})
	}
}

// TestRateLimitSharedAddressNeverBlocksValidKey is the office behind one
// NAT: a client there guesses keys until its address is refused, and then
// banned, yet a colleague's valid key from the same address is decided by
// its own plan throughout; the address's ban holds for wrong keys only.
func TestRateLimitSharedAddressNeverBlocksValidKey(t *testing.T) {
	from := func(r *http.Request, remote string) *http.Request {
		r.RemoteAddr = remote
		return r
	}
	badKey := func(remote string) *http.Request {
		return from(apitest.AuthedReq("psk_wrong_guess", "GET", "/v1/pets", ""), remote)
	}
	tests := []struct {
		name    string
		office  string // the shared address
		sibling string // another address counted as the same client
		strikes int    // wrong guesses after the 60 allowed ones
		code    string
		lasts   time.Duration
	}{
		{"window", "198.51.100.20:4000", "", 1, petstore.CodeRateLimited, time.Minute},
		{"ban", "198.51.100.21:4000", "", 40, petstore.CodeAPIKeyBanned, 15 * time.Minute},
		{"IPv6 /64", "[2001:db8:1:2::9]:4000", "[2001:db8:1:2:ffff::1]:4000", 1, petstore.CodeRateLimited, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
			for range 60 {
				wantStatus(t, do(t, e.h, "/v1", badKey(tt.office)), 401, petstore.CodeUnauthorized)
			}
			for i := range tt.strikes {
				wantStatus(t, do(t, e.h, "/v1", badKey(tt.office)), 429, "")
				if i == 0 {
					// Later attempts come after the refusal could be seen,
					// so they count as strikes.
					e.clock.Advance(2 * time.Second)
				}
			}
			valid := func(remote string) *http.Request { return from(e.req("GET", "/v1/pets", ""), remote) }
			for i, remote := range []string{tt.office, tt.sibling} {
				if remote == "" {
					continue
				}
				res := do(t, e.h, "/v1", valid(remote))
				wantStatus(t, res, 200, "")
				wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": strconv.Itoa(59 - i)})
				res = do(t, e.h, "/v1", badKey(remote))
				wantStatus(t, res, 429, tt.code)
				if msg := res.errorBody(t).Message; strings.Contains(msg, "API key") {
					t.Fatalf("message %q speaks of an API key; the address is what is refused", msg)
				}
			}
		})
	}
}

// TestRateLimitCanceledRequestIsNotAnError checks that a client that went
// away before the limiter decided is not logged as a limiter failure.
func TestRateLimitCanceledRequestIsNotAnError(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) {
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.h.ServeHTTP(httptest.NewRecorder(), e.req("GET", "/v1/pets", "").WithContext(ctx))
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a canceled request was logged as an error:\n%s", logs.String())
	}
}

// writerFunc adapts a function to io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestRateLimitPlanChange(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	ctx := context.Background()
	tests := []struct {
		plan   petstore.Plan
		limits petstore.Limits
		want   map[string]string
	}{
		{petstore.PlanFree, petstore.Limits{}, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59",
			"RateLimit-Policy": `"minute";q=60;w=60, "day";q=1000;w=86400`}},
		// Counts carry over: the second request of the window.
		{petstore.PlanPro, petstore.Limits{}, map[string]string{"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "298",
			"RateLimit-Policy": `"minute";q=300;w=60, "day";q=10000;w=86400`}},
		{petstore.PlanEnterprise, petstore.Limits{PerMinute: 10, PerDay: 20}, map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "7",
			"RateLimit": `"minute";r=7;t=60, "day";r=17;t=86400`}},
		{petstore.PlanFree, petstore.Limits{}, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "56"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.plan), func(t *testing.T) {
			if _, err := e.keys.SetPlan(ctx, e.key.ID, tt.plan, tt.limits); err != nil {
				t.Fatal(err)
			}
			res := e.get(t)
			wantStatus(t, res, 200, "")
			wantHeaders(t, res, tt.want)
		})
	}
}

func TestRateLimitBan(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	for range 60 {
		wantStatus(t, e.get(t), 200, "")
	}
	// 30 strikes are tolerated; the 31st within the minute bans the key.
	for i := range 30 {
		e.clock.Advance(time.Second)
		res := e.get(t)
		wantStatus(t, res, 429, petstore.CodeRateLimited)
		if i == 0 {
			wantHeaders(t, res, map[string]string{"Retry-After": "59"})
		}
	}
	banStart := e.clock.Now()
	banEnd := banStart.Add(15 * time.Minute)
	res := e.get(t)
	wantStatus(t, res, 429, petstore.CodeAPIKeyBanned)
	tests := []struct {
		name  string
		after time.Duration // since the ban started
	}{
		{"at once", 0},
		{"after the minute", 2 * time.Minute},
		{"a second before the end", 15*time.Minute - time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.clock.Advance(banStart.Add(tt.after).Sub(e.clock.Now()))
			res := e.get(t)
			wantStatus(t, res, 429, petstore.CodeAPIKeyBanned)
			left := int64((15*time.Minute - tt.after) / time.Second)
			wantHeaders(t, res, map[string]string{
				"X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset":     strconv.FormatInt(banEnd.Unix(), 10),
				"Retry-After":           strconv.FormatInt(left, 10),
				// No window has room before the ban ends.
				"RateLimit": fmt.Sprintf(`"minute";r=0;t=%d, "day";r=0;t=%d`, left, left),
			})
			if msg := res.errorBody(t).Message; !strings.Contains(msg, "API key temporarily banned") {
				t.Fatalf("message %q, want it to name the API key", msg)
			}
		})
	}
	// Requests during the ban did not extend it.
	e.clock.Advance(banEnd.Sub(e.clock.Now()))
	res = e.get(t)
	wantStatus(t, res, 200, "")
	wantHeaders(t, res, map[string]string{"X-RateLimit-Remaining": "59"})
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestRateLimitStoreDown(t *testing.T) {
	tests := []struct {
		name     string
		failOpen bool
		status   int
		code     string
	}{
		{"fail open admits with its own count", true, 200, ""},
		{"fail closed answers unavailable", false, 503, petstore.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := redislimit.ParseOptions(closedPort(t))
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(o)
			t.Cleanup(func() { c.Close() })
			e := newRLEnv(t, redislimit.New(c, "down:", redislimit.CallerClock()), func(_ *httpx.Config, l *ratelimit.Config) {
				l.FailClosed = !tt.failOpen
				l.StoreTimeout = 200 * time.Millisecond
			})
			// A hang shows up as the context's end, not as a stuck test.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, r := range []*http.Request{
				e.req("GET", "/v1/pets", ""),
				e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`),
				httptest.NewRequest("GET", "/v1/openapi.json", nil),
			} {
				status := tt.status
				if status == 200 && r.Method == "POST" {
					status = 201
				}
				res := do(t, e.h, "/v1", r.WithContext(ctx))
				if ctx.Err() != nil {
					t.Fatal("the request outlived its context: the store call was not bounded")
				}
				wantStatus(t, res, status, tt.code)
				if status != 503 { // admitted, counted in this process: nothing to wait for
					wantHeaders(t, res, map[string]string{"Retry-After": ""})
					if res.Header.Get("X-RateLimit-Limit") == "" || res.Header.Get("X-RateLimit-Remaining") == "" || res.Header.Get("X-RateLimit-Reset") == "" {
						t.Fatalf("%s %s admitted while the store is down: headers %v", r.Method, r.URL.Path, res.Header)
					}
					continue
				}
				// No decision, and no figures: this process never heard
				// from Redis of the budget, which others may have spent.
				// When to come back.
				wantHeaders(t, res, map[string]string{
					"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "",
					"Retry-After": "2",
				})
			}
		})
	}
}

// A handler with the in-memory rate limiter: every response reports the
// key's limits (here in both styles), and the 61st request within a minute
// on the Free plan is refused with Retry-After. With several processes, give each a limiter
// over redislimit.New(client, prefix) on one Redis instead.
func ExampleNew_rateLimited() {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, _ := keys.Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
	h, _ := httpx.New(httpx.Config{
		Service: petstore.NewService(store),
		Auth:    keys,
		Limiter: ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{}),
		// The IETF draft's headers too, not only X-RateLimit-*.
		IETFRateLimitHeaders: true,
	})
	var last *httptest.ResponseRecorder
	for i := 1; i <= 61; i++ {
		r := httptest.NewRequest("GET", "/v1/pets", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		last = httptest.NewRecorder()
		h.ServeHTTP(last, r)
		if i == 1 {
			fmt.Println(last.Code, last.Header().Get("RateLimit-Policy"))
			fmt.Println(last.Header().Get("X-RateLimit-Limit"), last.Header().Get("X-RateLimit-Remaining"))
		}
	}
	fmt.Println(last.Code, last.Header().Get("X-RateLimit-Remaining"), last.Header().Get("Retry-After") != "")
	// Output:
	// 200 "minute";q=60;w=60, "day";q=1000;w=86400
	// 60 59
	// 429 0 true
}

// BenchmarkRateLimitedHandler measures GET /v1/pets (an empty page) with
// and without the in-memory limiter in one run, so the difference is what
// limiting and its five headers cost a request:
//
//	go test -run x -bench RateLimitedHandler -benchmem ./httpx
func BenchmarkRateLimitedHandler(b *testing.B) {
	for _, limited := range []bool{false, true} {
		b.Run(fmt.Sprintf("limiter=%v", limited), func(b *testing.B) {
			pets := memstore.New()
			keys := petstore.NewKeys(pets)
			// Enterprise limits no benchmark reaches, so every request is a 200.
			_, secret, err := keys.Create(context.Background(), "", petstore.PlanEnterprise, petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			cfg := httpx.Config{Service: petstore.NewService(pets), Auth: keys}
			if limited {
				cfg.Limiter = ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
			}
			h, err := httpx.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/v1/pets", nil)
			r.Header.Set("Authorization", "Bearer "+secret)
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body)
				}
			}
		})
	}
}

// TestPublicDocumentsAreCacheableAndOffTheKeyBudget: a person reloading
// the OpenAPI document gets 304 Not Modified by ETag, and however often
// it is fetched, the address's budget for key attempts is untouched.
func TestPublicDocumentsAreCacheableAndOffTheKeyBudget(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	first := do(t, e.h, "/v1", httptest.NewRequest("GET", "/v1/openapi.json", nil))
	wantStatus(t, first, 200, "")
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") == "" {
		t.Fatalf("the document is not cacheable: ETag %q, Cache-Control %q", etag, first.Header.Get("Cache-Control"))
	}
	for range 100 {
		r := httptest.NewRequest("GET", "/v1/openapi.json", nil)
		r.Header.Set("If-None-Match", etag)
		if res := do(t, e.h, "/v1", r); res.Status != http.StatusNotModified {
			t.Fatalf("reload with If-None-Match: %d, want 304", res.Status)
		}
	}
	res := do(t, e.h, "/v1", httptest.NewRequest("GET", "/v1/pets", nil))
	wantStatus(t, res, 401, petstore.CodeUnauthorized)
	wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"})
}

// By default an answer carries the spec's X-RateLimit-* headers only; the
// IETF draft's pair comes with Config.IETFRateLimitHeaders.
func TestRateLimitHeadersDefaultToTheSpecs(t *testing.T) {
	for _, ietf := range []bool{false, true} {
		e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) { c.IETFRateLimitHeaders = ietf })
		if _, err := e.pets.CreatePet(context.Background(), petstore.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.pets.CreatePet(context.Background(), petstore.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
			t.Fatal(err)
		}
		res := do(t, e.h, "/v1", e.req("GET", "/v1/pets?limit=1", ""))
		if res.Status != http.StatusOK {
			t.Fatalf("status %d: %s", res.Status, res.Body)
		}
		want := []string{"Content-Type", "Etag", "Link", "X-Content-Type-Options",
			"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Request-Id"}
		if ietf {
			want = append(want, "Ratelimit", "Ratelimit-Policy")
			slices.Sort(want)
		}
		got := slices.Sorted(maps.Keys(res.Header))
		if !slices.Equal(got, want) {
			t.Errorf("IETFRateLimitHeaders %v: header fields\n %v\nwant\n %v", ietf, got, want)
		}
		if ietf && res.Header.Get("RateLimit") != `"minute";r=59;t=60, "day";r=999;t=86400` {
			t.Errorf("RateLimit = %q", res.Header.Get("RateLimit"))
		}
	}
}

// downStore is a shared store that never answers.
type downStore struct{}

func (downStore) Take(context.Context, ratelimit.Request) (ratelimit.Result, error) {
	return ratelimit.Result{}, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
}

// While the shared store is down, a failing-open limiter decides in
// memory, and every answer still carries the rate-limit headers, as the
// spec says of every response: what it admits, its own count; its 429s,
// the refusing window's.
func TestRateLimitStoreDownHasHeaders(t *testing.T) {
	e := newRLEnv(t, downStore{}, func(_ *httpx.Config, l *ratelimit.Config) { l.FailClosed = false })
	for i := range 60 {
		res := e.get(t)
		wantStatus(t, res, http.StatusOK, "")
		if res.Header.Get("X-RateLimit-Limit") != "60" || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(59-i) || res.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("request %d admitted while the store is down: headers %v", i+1, res.Header)
		}
	}
	res := e.get(t)
	wantStatus(t, res, http.StatusTooManyRequests, petstore.CodeRateLimited)
	if res.Header.Get("X-RateLimit-Limit") != "60" || res.Header.Get("X-RateLimit-Remaining") != "0" || res.Header.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("429 while the store is down: headers %v", res.Header)
	}
}
