package petstoretest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

var seeds = []petstore.NewPet{
	{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable},
	{Name: "Tom", CategoryID: 2, Status: petstore.StatusSold},
	{Name: "Kiwi", CategoryID: 3},
}

// do sends one request with the server's key and returns the status and body.
func do(t *testing.T, srv *petstoretest.Server, method, path, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Key())
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// inBothModes runs test, in parallel, on a fake listening on a loopback
// port and on one without a listener: opts are those NewServer needs for
// the mode (none for the loopback port).
func inBothModes(t *testing.T, test func(t *testing.T, opts ...petstoretest.Option)) {
	t.Helper()
	for _, mode := range []struct {
		name string
		opts []petstoretest.Option
	}{{"loopback", nil}, {"no listener", []petstoretest.Option{petstoretest.WithoutListener()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			test(t, mode.opts...)
		})
	}
}

func TestSeedWriteReadReset(t *testing.T) {
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, append(opts, petstoretest.WithPets(seeds...))...)
		ctx := context.Background()
		c := srv.Client()
		if got := srv.Pets(); len(got) != 3 || got[0] != (petstore.Pet{ID: 1, Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable}) {
			t.Fatalf("seeded pets = %+v", got)
		}
		created, err := c.CreatePet(ctx, petstore.NewPet{Name: "Nemo", CategoryID: 4})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.GetPet(ctx, created.ID)
		if err != nil || got != created {
			t.Fatalf("GetPet(%d) = %+v, %v; want %+v", created.ID, got, err, created)
		}
		page, err := c.ListPets(ctx, petstore.PetFilter{Status: petstore.StatusSold})
		if err != nil || len(page.Pets) != 1 || page.Pets[0].Name != "Tom" {
			t.Fatalf("sold pets = %+v, %v", page, err)
		}
		if n := len(srv.Pets()); n != 4 {
			t.Fatalf("%d pets after a create, want 4", n)
		}
		srv.Inject(petstoretest.Fault{Status: 500})
		srv.Reset()
		if got := srv.Pets(); len(got) != 3 || got[2].ID != 3 {
			t.Fatalf("pets after Reset = %+v, want the 3 seeds with ids 1..3", got)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("%d requests logged after Reset, want 0", n)
		}
		if _, err := c.GetPet(ctx, 1); err != nil {
			t.Fatalf("after Reset the key or the faults remain wrong: %v", err)
		}
	})
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t)
	status, _, _ := do(t, srv, "POST", "/pets", `{"name":"Rex","categoryId":1}`)
	if status != http.StatusCreated {
		t.Fatalf("create status %d", status)
	}
	do(t, srv, "GET", "/pets?limit=5&status=available", "")
	do(t, srv, "GET", "/pets/99", "")
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests logged, want 3", len(reqs))
	}
	tests := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/pets", `{"name":"Rex","categoryId":1}`, 201},
		{"GET", "/v1/pets", "", 200},
		{"GET", "/v1/pets/99", "", 404},
	}
	for i, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := reqs[i]
			if r.Method != tt.method || r.Path != tt.path || string(r.Body) != tt.body || r.Status != tt.status {
				t.Fatalf("logged %s %s %q -> %d, want %s %s %q -> %d", r.Method, r.Path, r.Body, r.Status, tt.method, tt.path, tt.body, tt.status)
			}
			if r.Header.Get("Authorization") != "" {
				t.Fatal("the request log holds the Authorization header")
			}
			for _, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, srv.Key()) {
						t.Fatal("the request log holds the API key")
					}
				}
			}
		})
	}
	if got := reqs[1].Query.Get("status"); got != "available" {
		t.Fatalf("logged query status = %q", got)
	}
	if got := reqs[0].Header.Get("Content-Type"); got != "application/json" {
		t.Fatalf("logged Content-Type = %q", got)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      petstoretest.Fault
		method     string
		path       string
		wantStatus []int // of consecutive identical requests
		wantCode   string
		wantHeader [2]string
	}{
		{"next n with status", petstoretest.Fault{Times: 2, Status: 503}, "GET", "/pets", []int{503, 503, 200}, petstore.CodeUnavailable, [2]string{}},
		{"every request", petstoretest.Fault{Status: 500}, "GET", "/pets", []int{500, 500, 500}, petstore.CodeInternal, [2]string{}},
		{"error body", petstoretest.Fault{Times: 1, Error: &petstore.Error{Code: petstore.CodeAPIKeyBanned, Message: "banned"}, Header: http.Header{"Retry-After": {"900"}}},
			"GET", "/pets", []int{429, 200}, petstore.CodeAPIKeyBanned, [2]string{"Retry-After", "900"}},
		{"429 gets Retry-After", petstoretest.Fault{Times: 1, Status: 429}, "GET", "/pets", []int{429, 200}, petstore.CodeRateLimited, [2]string{"Retry-After", "1"}},
		{"route matches", petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1, Status: 502}, "GET", "/pets/1", []int{502, 200}, petstore.CodeInternal, [2]string{}},
		{"route does not match", petstoretest.Fault{Route: "POST /pets", Status: 502}, "GET", "/pets/1", []int{200, 200}, "", [2]string{}},
		{"after handling", petstoretest.Fault{Route: "POST /pets", Times: 1, Status: 502, After: true}, "POST", "/pets", []int{502, 201}, petstore.CodeInternal, [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := petstoretest.NewServer(t, petstoretest.WithPets(seeds[0]), petstoretest.WithoutListener())
			srv.Inject(tt.fault)
			body := ""
			if tt.method == "POST" {
				body = `{"name":"Nemo","categoryId":2}`
			}
			for i, want := range tt.wantStatus {
				status, h, b := do(t, srv, tt.method, tt.path, body)
				if status != want {
					t.Fatalf("request %d: status %d, want %d (%s)", i, status, want, b)
				}
				if i == 0 && tt.wantCode != "" {
					var e petstore.Error
					if err := json.Unmarshal([]byte(b), &e); err != nil || e.Code != tt.wantCode || e.Status != want {
						t.Fatalf("fault body %s, want code %s and status %d", b, tt.wantCode, want)
					}
					if tt.wantHeader[0] != "" && h.Get(tt.wantHeader[0]) != tt.wantHeader[1] {
						t.Fatalf("%s = %q, want %q", tt.wantHeader[0], h.Get(tt.wantHeader[0]), tt.wantHeader[1])
					}
				}
			}
			if tt.fault.After {
				// The faulted request was handled: both creates happened.
				if n := len(srv.Pets()); n != 3 {
					t.Fatalf("%d pets, want 3 (a seed and two creates)", n)
				}
			}
		})
	}
}

func TestDropConnection(t *testing.T) {
	t.Run("listener", func(t *testing.T) {
		t.Parallel()
		srv := petstoretest.NewServer(t)
		srv.Inject(petstoretest.Fault{Times: 1, Drop: true})
		// A fresh connection: Go's transport silently retries a GET that
		// failed on a reused one, which would hide the drop.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", srv.URL+"/pets", nil)
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("dropped request answered %d", resp.StatusCode)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Status != 0 {
			t.Fatalf("log = %+v, want one request with status 0", reqs)
		}
		if status, _, _ := do(t, srv, "GET", "/pets", ""); status != 200 {
			t.Fatalf("after the drop: %d", status)
		}
	})
	t.Run("no listener", func(t *testing.T) {
		t.Parallel()
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
		srv.Inject(petstoretest.Fault{Times: 1, Drop: true})
		_, err := srv.Client(client.WithMaxAttempts(1)).ListPets(context.Background(), petstore.PetFilter{})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ListPets over a dropped connection = %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

// TestNoListenerInSynctest runs the fake inside a synctest bubble, where
// time is virtual: a 10-second latency fault passes at once, and exactly
// 10 virtual seconds pass.
func TestNoListenerInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(seeds...))
		srv.Inject(petstoretest.Fault{Times: 1, Latency: 10 * time.Second})
		start := time.Now()
		page, err := srv.Client().ListPets(context.Background(), petstore.PetFilter{})
		if err != nil || len(page.Pets) != 3 {
			t.Fatalf("ListPets = %+v, %v", page, err)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Fatalf("virtual time passed %v, want 10s", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Inject(petstoretest.Fault{Times: 1, Latency: time.Hour})
		_, err = srv.Client(client.WithMaxAttempts(1)).ListPets(ctx, petstore.PetFilter{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a client giving up during latency got %v, want DeadlineExceeded", err)
		}
	})
}

func TestParallelFakesAreIndependent(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint("fake", i), func(t *testing.T) {
			t.Parallel()
			srv := petstoretest.NewServer(t)
			c := srv.Client()
			for j := range i + 1 {
				if _, err := c.CreatePet(context.Background(), petstore.NewPet{Name: fmt.Sprint("p", j), CategoryID: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(srv.Pets()); n != i+1 {
				t.Fatalf("fake %d holds %d pets, want %d", i, n, i+1)
			}
		})
	}
}

func TestSameAPIAsProduction(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithLimits(petstore.Limits{PerMinute: 2, PerDay: 100}))
	req, _ := http.NewRequest("GET", srv.URL+"/pets", nil)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: status %d, want 401", resp.StatusCode)
	}
	status, h, _ := do(t, srv, "GET", "/pets/1", "")
	if status != 404 || h.Get("Sunset") == "" || h.Get("Deprecation") == "" {
		t.Fatalf("getPet: %d, Sunset %q, Deprecation %q", status, h.Get("Sunset"), h.Get("Deprecation"))
	}
	status, h, _ = do(t, srv, "GET", "/pets", "")
	if status != 200 || h.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("second request: %d, remaining %q", status, h.Get("X-RateLimit-Remaining"))
	}
	status, h, _ = do(t, srv, "GET", "/pets", "")
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("third request: %d, Retry-After %q; want 429 with Retry-After", status, h.Get("Retry-After"))
	}
}

func TestWithStore(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	srv := petstoretest.NewServer(t, petstoretest.WithStore(store), petstoretest.WithPets(seeds[0]))
	if pets := store.Pets(); len(pets) != 1 || pets[0].Name != "Rex" {
		t.Fatalf("the given store holds %+v", pets)
	}
	if srv.Store() != petstore.Store(store) {
		t.Fatal("Store() is not the given store")
	}
}

func TestConcurrentRequestsAreLogged(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	c := srv.Client()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _, _ = c.ListPets(context.Background(), petstore.PetFilter{}) })
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 20 {
		t.Fatalf("%d requests logged, want 20", n)
	}
}

// BenchmarkStartup compares starting a whole fake petstore with starting
// httptest's server around a trivial handler.
func BenchmarkStartup(b *testing.B) {
	b.Run("petstoretest", func(b *testing.B) {
		for b.Loop() {
			petstoretest.NewServer(b).Close()
		}
	})
	b.Run("petstoretest-nolistener", func(b *testing.B) {
		for b.Loop() {
			petstoretest.NewServer(b, petstoretest.WithoutListener()).Close()
		}
	})
	b.Run("httptest", func(b *testing.B) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
		for b.Loop() {
			httptest.NewServer(h).Close()
		}
	})
}

// A header set under a key that is not canonical (req.Header["authorization"])
// reaches the API as a server parses it, canonical, in both modes: the key
// authenticates, and the request log keeps no Authorization under any
// spelling.
func TestHeadersReachTheAPICanonical(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, opts...)
		req, err := http.NewRequest("GET", srv.URL+"/pets", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header["authorization"] = []string{"Bearer " + srv.Key()}
		req.Header["x-trace"] = []string{"abc"}
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a lower-case authorization header: status %d, want 200 as over a socket", resp.StatusCode)
		}
		logged := srv.Requests()[0].Header
		for k, vs := range logged {
			if strings.Contains(strings.Join(vs, " "), srv.Key()) {
				t.Fatalf("the request log keeps the API key under %q", k)
			}
		}
		if got := logged.Get("X-Trace"); got != "abc" {
			t.Fatalf("logged X-Trace = %q, want abc", got)
		}
	})
}

// The request log is in the order requests arrived, oldest first, even
// when a request held by a Latency fault ends after a later one: a
// client that gave up on the first and retried finds its attempts in
// the order it made them.
func TestRequestLogInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
		srv.Inject(petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1, Latency: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		held := make(chan error, 1)
		go func() {
			_, err := srv.Client(client.WithMaxAttempts(1)).GetPet(ctx, 1)
			held <- err
		}()
		synctest.Wait() // the first request waits in its latency
		do(t, srv, "GET", "/pets", "")
		cancel()
		if err := <-held; !errors.Is(err, context.Canceled) {
			t.Fatalf("the held request ended with %v, want context.Canceled", err)
		}
		var got []string
		for _, r := range srv.Requests() {
			got = append(got, fmt.Sprint(r.Method, " ", r.Path, " ", r.Status))
		}
		if want := []string{"GET /v1/pets/1 0", "GET /v1/pets 200"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Fatalf("request log %q, want %q", got, want)
		}
	})
}

// After Close the fake answers nothing in either mode: a request fails
// as one to a closed loopback port does, with a connection refused, and
// is not logged.
func TestClosedServerRefusesRequests(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, opts...)
		hc := srv.HTTPClient()
		srv.Close()
		req, _ := http.NewRequest("GET", srv.URL+"/pets", nil)
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("a closed server answered %d", resp.StatusCode)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("a request to a closed server failed with %v, want a connection refused", err)
		}
		if _, err := srv.Client(client.WithMaxAttempts(1)).ListPets(context.Background(), petstore.PetFilter{}); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("ListPets on a closed server: %v, want a connection refused", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("a closed server logged %d requests", n)
		}
	})
}

// Requests returns a copy: a test that changes what it got (its headers,
// query or body) changes nothing the next call returns.
func TestRequestsIsACopy(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	do(t, srv, "POST", "/pets?x=1", `{"name":"Rex","categoryId":1}`)
	got := srv.Requests()[0]
	got.Header.Set("Content-Type", "text/plain")
	got.Query.Set("x", "2")
	got.Body[0] = 'X'
	again := srv.Requests()[0]
	if again.Header.Get("Content-Type") != "application/json" || again.Query.Get("x") != "1" || string(again.Body) != `{"name":"Rex","categoryId":1}` {
		t.Fatalf("after changing a request Requests returned, the log holds %v %v %q", again.Header, again.Query, again.Body)
	}
}

// Reset gives the key back as NewServer made it: valid again after a
// test revoked it through Store, and on its starting plan after a test
// changed that, so the next test on the same fake starts clean.
func TestResetRestoresTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	id := srv.APIKey().ID
	if _, err := srv.Store().SetKeyPlan(ctx, id, petstore.PlanFree, petstore.Limits{}); err != nil {
		t.Fatal(err)
	}
	srv.Reset()
	if _, h, _ := do(t, srv, "GET", "/pets", ""); h.Get("X-RateLimit-Limit") != "300" {
		t.Fatalf("after a plan change and Reset: X-RateLimit-Limit %q, want the Pro plan's 300", h.Get("X-RateLimit-Limit"))
	}
	if err := srv.Store().DeleteKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := do(t, srv, "GET", "/pets", ""); status != http.StatusUnauthorized {
		t.Fatalf("with the key revoked: %d, want 401", status)
	}
	srv.Reset()
	if status, _, body := do(t, srv, "GET", "/pets", ""); status != http.StatusOK {
		t.Fatalf("after a revoke and Reset: %d %s, want 200: the key stays valid", status, body)
	}
	if got := srv.APIKey(); got.ID != id || got.Plan != petstore.PlanPro {
		t.Fatalf("APIKey after Reset = %+v, want the same key on Pro", got)
	}
}

// wipingStore is a store of the caller's whose Reset forgets everything,
// keys included, as a store reset by dropping its tables would.
type wipingStore struct{ *memstore.Store }

func (s *wipingStore) Reset() { s.Store = memstore.New() }

// TestResetAfterAStoreResetThatDropsKeys: with a store whose Reset
// deletes every key, the fake's key still authenticates after Reset, on
// its plan, and the seeds are back.
func TestResetAfterAStoreResetThatDropsKeys(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithStore(&wipingStore{memstore.New()}), petstoretest.WithPets(seeds[0]), petstoretest.WithoutListener())
	srv.Reset()
	status, h, body := do(t, srv, "GET", "/pets", "")
	if status != http.StatusOK || h.Get("X-RateLimit-Limit") != "300" {
		t.Fatalf("after Reset: %d (X-RateLimit-Limit %q) %s, want 200 on the Pro plan's 300", status, h.Get("X-RateLimit-Limit"), body)
	}
	if pets := srv.Pets(); len(pets) != 1 || pets[0].Name != "Rex" {
		t.Fatalf("after Reset the store holds %+v, want the seed", pets)
	}
}
