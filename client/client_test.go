package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/petstoretest"
)

// clock is a virtual clock shared by a fake server and a client: the
// client's waits advance it instead of sleeping.
func newClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
}

func statuses(srv *petstoretest.Server) []int {
	var out []int
	for _, r := range srv.Requests() {
		out = append(out, r.Status)
	}
	return out
}

func asError(t *testing.T, err error) *petstore.Error {
	t.Helper()
	var e *petstore.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *petstore.Error", err, err)
	}
	return e
}

func TestPagination(t *testing.T) {
	t.Parallel()
	var seeds []petstore.NewPet
	for i := range 95 {
		st := petstore.StatusAvailable
		if i%3 == 0 {
			st = petstore.StatusSold
		}
		seeds = append(seeds, petstore.NewPet{Name: fmt.Sprint("pet", i), CategoryID: 1, Status: st})
	}
	srv := petstoretest.NewServer(t, petstoretest.WithPets(seeds...), petstoretest.WithoutListener())
	c := srv.Client()
	ctx := context.Background()

	tests := []struct {
		name      string
		filter    petstore.PetFilter
		wantPets  int
		wantPages int
	}{
		{"all, pages of 10", petstore.PetFilter{Limit: 10}, 95, 10},
		{"all, default page", petstore.PetFilter{}, 95, 5},
		{"sold, pages of 7", petstore.PetFilter{Limit: 7, Status: petstore.StatusSold}, 32, 5},
		{"one page of 100", petstore.PetFilter{Limit: 100}, 95, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Reset()
			var ids []int64
			for p, err := range c.All(ctx, tt.filter) {
				if err != nil {
					t.Fatal(err)
				}
				if tt.filter.Status != "" && p.Status != tt.filter.Status {
					t.Fatalf("pet %+v does not match status %s", p, tt.filter.Status)
				}
				ids = append(ids, p.ID)
			}
			if len(ids) != tt.wantPets || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("All yielded %d ids %v, want %d distinct ascending", len(ids), ids, tt.wantPets)
			}
			if n := len(srv.Requests()); n != tt.wantPages {
				t.Fatalf("%d requests, want %d pages", n, tt.wantPages)
			}
		})
	}

	t.Run("ListPets cursor", func(t *testing.T) {
		page, err := c.ListPets(ctx, petstore.PetFilter{Limit: 50})
		if err != nil || len(page.Pets) != 50 || page.NextCursor == "" {
			t.Fatalf("first page: %d pets, cursor %q, %v", len(page.Pets), page.NextCursor, err)
		}
		page, err = c.ListPets(ctx, petstore.PetFilter{Limit: 50, Cursor: page.NextCursor})
		if err != nil || len(page.Pets) != 45 || page.NextCursor != "" || page.Pets[0].ID != 51 {
			t.Fatalf("last page: %d pets from %+v, cursor %q, %v", len(page.Pets), page.Pets[0], page.NextCursor, err)
		}
	})
	t.Run("break stops fetching", func(t *testing.T) {
		srv.Reset()
		for range c.All(ctx, petstore.PetFilter{Limit: 10}) {
			break
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests after breaking on the first pet, want 1", n)
		}
	})
}

func TestRateLimitedThenRetryAfter(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithLimits(petstore.Limits{PerMinute: 2, PerDay: 100}), petstoretest.WithClock(clk.Now))
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
	ctx := context.Background()
	for range 3 {
		if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := statuses(srv), []int{200, 200, 429, 200}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	sleeps := clk.Sleeps()
	if len(sleeps) != 1 || sleeps[0] < time.Second || sleeps[0] > time.Minute {
		t.Fatalf("waits %v, want one wait of Retry-After (1s..60s)", sleeps)
	}
	rl, ok := c.RateLimit()
	if !ok || rl.Limit != 2 || rl.Remaining != 1 {
		t.Fatalf("RateLimit() = %+v, %v; want limit 2, remaining 1 in the new window", rl, ok)
	}
}

func TestRateLimitWaitBeyondBudgetFailsAtOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	srv.Inject(petstoretest.Fault{Times: 1, Status: 429, Header: http.Header{"Retry-After": {"600"}}})
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep), client.WithMaxWait(time.Minute))
	_, err := c.ListPets(context.Background(), petstore.PetFilter{})
	if e := asError(t, err); e.Code != petstore.CodeRateLimited || e.Status != 429 {
		t.Fatalf("error %+v, want rate_limited 429", e)
	}
	if len(clk.Sleeps()) != 0 {
		t.Fatalf("waited %v although the wait exceeded the budget", clk.Sleeps())
	}
}

// A wait that would outlast the call's deadline is not begun: the call
// returns the 429 that asked for it, not DeadlineExceeded, so the caller
// learns why and when to come back.
func TestRateLimitWaitBeyondDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	srv.Inject(petstoretest.Fault{Times: 1, Status: 429, Header: http.Header{"Retry-After": {"30"}}})
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.ListPets(ctx, petstore.PetFilter{})
	if e := asError(t, err); e.Code != petstore.CodeRateLimited || !client.IsRetryable(err) {
		t.Fatalf("error %+v, want rate_limited, retryable", e)
	}
	if len(clk.Sleeps()) != 0 {
		t.Fatalf("waited %v although the wait outlasted the deadline", clk.Sleeps())
	}
	// The next call, under the same deadline, sends nothing: the client
	// holds its calls back until the Retry-After has passed.
	_, err = c.ListPets(ctx, petstore.PetFilter{})
	if e := asError(t, err); e.Code != petstore.CodeRateLimited || len(srv.Requests()) != 1 || len(clk.Sleeps()) != 0 {
		t.Fatalf("second call: %+v after %d requests and waits %v; want the held 429 at once, 1 request", e, len(srv.Requests()), clk.Sleeps())
	}
}

func TestBanIsNotRetried(t *testing.T) {
	t.Parallel()
	t.Run("injected", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
		srv.Inject(petstoretest.Fault{Error: &petstore.Error{Code: petstore.CodeAPIKeyBanned, Message: "banned"}, Header: http.Header{"Retry-After": {"5"}}})
		c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
		_, err := c.ListPets(context.Background(), petstore.PetFilter{})
		if e := asError(t, err); e.Code != petstore.CodeAPIKeyBanned || e.Status != 429 {
			t.Fatalf("error %+v, want api_key_banned 429", e)
		}
		if n := len(srv.Requests()); n != 1 || len(clk.Sleeps()) != 0 {
			t.Fatalf("%d requests and waits %v, want one request and no wait", n, clk.Sleeps())
		}
	})
	t.Run("real ban", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithClock(clk.Now),
			petstoretest.WithLimits(petstore.Limits{PerMinute: 1, PerDay: 100}))
		// A program that ignores Retry-After: each call, from a client of
		// its own (a Client holds back its calls after a 429), tries once,
		// every 100 ms, long past the second of grace after its first 429.
		var err error
		for range 60 {
			clk.Advance(100 * time.Millisecond)
			rude := srv.Client(client.WithMaxAttempts(1))
			if _, err = rude.ListPets(context.Background(), petstore.PetFilter{}); petstore.ErrorCode(err) == petstore.CodeAPIKeyBanned {
				break
			}
		}
		if petstore.ErrorCode(err) != petstore.CodeAPIKeyBanned {
			t.Fatalf("no ban after 60 rapid requests: %v", err)
		}
		before := len(srv.Requests())
		c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
		_, err = c.ListPets(context.Background(), petstore.PetFilter{})
		if petstore.ErrorCode(err) != petstore.CodeAPIKeyBanned || len(srv.Requests()) != before+1 || len(clk.Sleeps()) != 0 {
			t.Fatalf("banned call: %v after %d requests, waits %v; want the ban error after one request", err, len(srv.Requests())-before, clk.Sleeps())
		}
	})
}

func TestServerErrorsBackOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fault     petstoretest.Fault
		attempts  int
		wantErr   string
		wantCalls int
	}{
		{"503 twice then ok", petstoretest.Fault{Times: 2, Status: 503}, 4, "", 3},
		{"dropped connection then ok", petstoretest.Fault{Times: 1, Drop: true}, 4, "", 2},
		{"500 until attempts run out", petstoretest.Fault{Status: 500}, 3, petstore.CodeInternal, 3},
		{"400 is not retried", petstoretest.Fault{Status: 400}, 4, petstore.CodeInvalidRequest, 1},
		{"404 is not retried", petstoretest.Fault{Error: &petstore.Error{Code: petstore.CodeNotFound, Message: "gone"}}, 4, petstore.CodeNotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
			srv.Inject(tt.fault)
			c := srv.Client(client.WithClock(clk.Now, clk.Sleep), client.WithMaxAttempts(tt.attempts), client.WithBackoff(100*time.Millisecond, 150*time.Millisecond))
			_, err := c.ListPets(context.Background(), petstore.PetFilter{})
			if got := petstore.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error %v, want code %q", err, tt.wantErr)
			}
			if n := len(srv.Requests()); n != tt.wantCalls {
				t.Fatalf("%d requests, want %d", n, tt.wantCalls)
			}
			sleeps := clk.Sleeps()
			if len(sleeps) != tt.wantCalls-1 {
				t.Fatalf("waits %v, want %d", sleeps, tt.wantCalls-1)
			}
			for i, d := range sleeps {
				// Full jitter: within [0, min(max, base·2ⁱ)].
				if ceil := min(150*time.Millisecond, 100*time.Millisecond<<i); d < 0 || d > ceil {
					t.Fatalf("wait %d = %v, outside [0, %v]", i, d, ceil)
				}
			}
		})
	}
}

func TestErrorsCarryStatus(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	_, err := srv.Client().CreatePet(context.Background(), petstore.NewPet{Name: "", CategoryID: 1})
	if e := asError(t, err); e.Code != petstore.CodeInvalidRequest || e.Status != 400 || e.Message != "name is required" {
		t.Fatalf("error %+v", e)
	}
	_, err = srv.Client().GetPet(context.Background(), 404)
	if !errors.Is(err, &petstore.Error{Code: petstore.CodeNotFound}) {
		t.Fatalf("GetPet(404) = %v, want not_found", err)
	}
	bad, _ := client.New(srv.URL, "psk_wrong", client.WithHTTPClient(srv.HTTPClient()))
	if _, err := bad.ListPets(context.Background(), petstore.PetFilter{}); asError(t, err).Status != 401 {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestCancelStopsAtOnce(t *testing.T) {
	t.Parallel()
	t.Run("while waiting for Retry-After", func(t *testing.T) {
		t.Parallel()
		srv := petstoretest.NewServer(t)
		srv.Inject(petstoretest.Fault{Status: 429, Header: http.Header{"Retry-After": {"3600"}}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := srv.Client(client.WithMaxWait(2*time.Hour)).ListPets(ctx, petstore.PetFilter{})
			done <- err
		}()
		for len(srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("during a slow response", func(t *testing.T) {
		t.Parallel()
		srv := petstoretest.NewServer(t)
		srv.Inject(petstoretest.Fault{Latency: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := srv.Client().CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	})
}

func TestNotAcceptedBaseURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x/v1", "http:///v1", "::"} {
		t.Run(u, func(t *testing.T) {
			if _, err := client.New(u, "k"); err == nil {
				t.Fatalf("New(%q) succeeded", u)
			}
		})
	}
}

func TestSendsUserAgentAndIdempotencyKey(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	c := srv.Client(client.WithUserAgent("myapp/2"))
	ctx := client.WithIdempotencyKey(context.Background(), "order-42")
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePet(context.Background(), petstore.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if reqs[0].Header.Get("User-Agent") != "myapp/2" || reqs[0].Header.Get("Idempotency-Key") != "order-42" {
		t.Fatalf("headers %v", reqs[0].Header)
	}
	if k := reqs[1].Header.Get("Idempotency-Key"); len(k) != 36 {
		t.Fatalf("automatic Idempotency-Key %q, want a UUID", k)
	}
}

func TestCreateRetriedWithSameKeyCreatesOnePet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault petstoretest.Fault
	}{
		{"response lost as 502", petstoretest.Fault{Route: "POST /pets", Times: 1, Status: 502, After: true}},
		{"connection dropped after create", petstoretest.Fault{Route: "POST /pets", Times: 1, Drop: true, After: true}},
		{"two losses", petstoretest.Fault{Route: "POST /pets", Times: 2, Status: 504, After: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
			srv.Inject(tt.fault)
			c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
			pet, err := c.CreatePet(context.Background(), petstore.NewPet{Name: "Rex", CategoryID: 1})
			if err != nil {
				t.Fatal(err)
			}
			if pets := srv.Pets(); len(pets) != 1 || pets[0] != pet {
				t.Fatalf("store holds %+v, want exactly %+v", pets, pet)
			}
			reqs := srv.Requests()
			key := reqs[0].Header.Get("Idempotency-Key")
			if len(reqs) < 2 || key == "" {
				t.Fatalf("%d requests, key %q: the create was not retried", len(reqs), key)
			}
			for _, r := range reqs {
				if r.Header.Get("Idempotency-Key") != key {
					t.Fatalf("retry used key %q, first used %q", r.Header.Get("Idempotency-Key"), key)
				}
			}
		})
	}
}

// IsRetryable on what the client itself returns: no answer (nothing
// listens) is retryable; an answer it cannot use (a 200 that is no list of
// pets) is not, since a retry would get the same.
func TestIsRetryableOnTheClientsErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"not":"a list"}`)
	}))
	t.Cleanup(bad.Close)
	for _, tt := range []struct {
		name, url string
		want      bool
	}{
		{"no answer", closed, true},
		{"an unusable answer", bad.URL, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(tt.url, "psk_any", client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListPets(context.Background(), petstore.PetFilter{})
			if err == nil || client.IsRetryable(err) != tt.want {
				t.Fatalf("IsRetryable(%v) = %v, want %v", err, client.IsRetryable(err), tt.want)
			}
		})
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false},
		{&petstore.Error{Code: petstore.CodeUnavailable, Status: 503}, true},
		{&petstore.Error{Code: petstore.CodeInternal, Status: 500}, true},
		{&petstore.Error{Code: petstore.CodeRateLimited, Status: 429}, true},
		{&petstore.Error{Code: petstore.CodeIdempotencyKeyInUse, Status: 409}, true},
		{&petstore.Error{Code: petstore.CodeAPIKeyBanned, Status: 429}, false},
		{&petstore.Error{Code: petstore.CodeInvalidRequest, Status: 400}, false},
		{&petstore.Error{Code: petstore.CodeIdempotencyKeyReused, Status: 422}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			if got := client.IsRetryable(tt.err); got != tt.want {
				t.Fatalf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// An attempt cut short by the http.Client's Timeout (a server that hangs:
// a black hole) is one the client retries, so IsRetryable must say so,
// although the error it gets matches context.DeadlineExceeded.
func TestIsRetryableOnAttemptTimeout(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxy.Pause()
	base := "http://" + proxy.Addr() + u.Path
	hc := &http.Client{Timeout: 200 * time.Millisecond}

	once, err := client.New(base, srv.Key(), client.WithHTTPClient(hc), client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = once.ListPets(context.Background(), petstore.PetFilter{})
	if err == nil || !client.IsRetryable(err) {
		t.Fatalf("timed-out attempt: IsRetryable(%v) = false, want true", err)
	}

	// The client itself retries it: the wait before the second attempt
	// ends the black hole, and the call succeeds.
	twice, err := client.New(base, srv.Key(), client.WithHTTPClient(hc), client.WithMaxAttempts(2),
		client.WithClock(nil, func(ctx context.Context, d time.Duration) error {
			proxy.Restore()
			return ctx.Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twice.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("the client did not retry a timed-out attempt: %v", err)
	}
}

// A name that is not valid UTF-8 cannot be sent as JSON (encoding/json
// would turn its bad bytes into U+FFFD): the client refuses it as the
// local service does, instead of creating a pet under another name.
func TestCreatePetInvalidUTF8NameIsRefused(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	bad := petstore.NewPet{Name: "Re\xffx", CategoryID: 1}
	_, local := petstore.NewService(srv.Store()).CreatePet(context.Background(), bad)
	pet, err := srv.Client().CreatePet(context.Background(), bad)
	if err == nil {
		t.Fatalf("CreatePet(%q) created %+v; the local service says %v", bad.Name, pet, local)
	}
	if e := asError(t, err); e.Code != petstore.CodeInvalidRequest || e.Message != petstore.ErrorMessage(local) {
		t.Fatalf("error %+v, want the local service's %v", e, local)
	}
	if pets := srv.Pets(); len(pets) != 0 {
		t.Fatalf("store holds %+v, want no pet", pets)
	}
}

// IsRetryable says what the client retries: a 429 is waited out and sent
// again whatever code its body names (a gateway's own 429 names its
// own), so IsRetryable must say true for it too, as for rate_limited.
func TestIsRetryableAgreesOnA429OfAnotherCode(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"code":"too_many_requests","message":"slow down"}`)
	}))
	t.Cleanup(srv.Close)
	clk := newClock()
	c, err := client.New(srv.URL, "psk_any", client.WithMaxAttempts(2), client.WithClock(clk.Now, clk.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPets(context.Background(), petstore.PetFilter{})
	if n := requests.Load(); n != 2 {
		t.Fatalf("%d requests, want 2: the client retries a 429", n)
	}
	if !client.IsRetryable(err) {
		t.Fatalf("IsRetryable(%v) = false for a 429 the client retried", err)
	}
}

// TestIdempotencyKeyThatCannotBeSentIsRefused: a caller's key with a
// control character (a job id read with its trailing newline) cannot go
// in a header: net/http refuses every attempt, which the client must not
// take for the network's and retry, nor report as retryable, since a
// retry later fails the same. The create is refused without a request.
func TestIdempotencyKeyThatCannotBeSentIsRefused(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t) // over a socket, as net/http checks headers there
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
	for _, key := range []string{"job-42\n", "job\r\n42", "job\x0042", "job-42\x7f"} {
		ctx := client.WithIdempotencyKey(context.Background(), key)
		_, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
		if e := asError(t, err); e.Code != petstore.CodeInvalidRequest || client.IsRetryable(err) {
			t.Fatalf("key %q: error %v, want invalid_request, not retryable", key, err)
		}
		_, err = c.CreateOrder(ctx, petstore.NewOrder{PetID: 1})
		if e := asError(t, err); e.Code != petstore.CodeInvalidRequest || client.IsRetryable(err) {
			t.Fatalf("key %q, CreateOrder: error %v, want invalid_request, not retryable", key, err)
		}
	}
	if n, waits := len(srv.Requests()), clk.Sleeps(); n != 0 || len(waits) != 0 {
		t.Fatalf("%d requests, waits %v; want none", n, waits)
	}
}

// TestEmptyIdempotencyKeyIsRefused: WithIdempotencyKey promises that a
// create run again later (after a crash, say) creates the pet once. An
// empty key, such as a job id that was never set, is none the server
// takes (1 to 255 characters); the client sent a fresh random key in its
// place, so each run created another pet. It is refused as
// invalid_request, without a request.
func TestEmptyIdempotencyKeyIsRefused(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	c := srv.Client()
	ctx := client.WithIdempotencyKey(context.Background(), "")
	for run := 1; run <= 2; run++ {
		_, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
		if err == nil {
			t.Fatalf("run %d: the create under an empty Idempotency-Key succeeded; pets now %d", run, len(srv.Pets()))
		}
		if e := asError(t, err); e.Code != petstore.CodeInvalidRequest || client.IsRetryable(err) {
			t.Fatalf("run %d: error %v, want invalid_request, not retryable", run, err)
		}
		_, err = c.CreateOrder(ctx, petstore.NewOrder{PetID: 1})
		if e := asError(t, err); e.Code != petstore.CodeInvalidRequest {
			t.Fatalf("run %d, CreateOrder: error %v, want invalid_request", run, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}
