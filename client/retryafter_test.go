package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestGivingUpTellsRetryAfter: when the client stops retrying an answer
// that asked it to wait, the caller that wants to try again later (a job
// queue, say) learns how long the server asked for, with errors.As, and
// still finds the *petstore.Error under it.
func TestGivingUpTellsRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault petstoretest.Fault
		opts  []client.Option
		code  string
		want  time.Duration
	}{
		{"429 past WithMaxWait", petstoretest.Fault{Status: 429, Header: http.Header{"Retry-After": {"600"}}},
			[]client.Option{client.WithMaxWait(time.Minute)}, petstore.CodeRateLimited, 10 * time.Minute},
		{"429 until attempts run out", petstoretest.Fault{Status: 429, Header: http.Header{"Retry-After": {"7"}}},
			[]client.Option{client.WithMaxAttempts(2)}, petstore.CodeRateLimited, 7 * time.Second},
		{"503 until attempts run out", petstoretest.Fault{Status: 503, Header: http.Header{"Retry-After": {"2"}}},
			[]client.Option{client.WithMaxAttempts(3), client.WithBackoff(time.Millisecond, time.Millisecond)}, petstore.CodeUnavailable, 2 * time.Second},
		{"banned", petstoretest.Fault{Error: &petstore.Error{Code: petstore.CodeAPIKeyBanned, Message: "banned"}, Header: http.Header{"Retry-After": {"900"}}},
			nil, petstore.CodeAPIKeyBanned, 15 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
			srv.Inject(tt.fault)
			c := srv.Client(append([]client.Option{client.WithClock(clk.Now, clk.Sleep)}, tt.opts...)...)
			_, err := c.ListPets(context.Background(), petstore.PetFilter{})
			if e := asError(t, err); e.Code != tt.code {
				t.Fatalf("error %v, want %s", err, tt.code)
			}
			var ra *client.RetryAfterError
			if !errors.As(err, &ra) {
				t.Fatalf("error %v (%T) is no *client.RetryAfterError", err, err)
			}
			if ra.RetryAfter != tt.want {
				t.Fatalf("RetryAfter = %v, want %v", ra.RetryAfter, tt.want)
			}
		})
	}

	t.Run("a call held back by another's 429", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
		srv.Inject(petstoretest.Fault{Times: 1, Status: 429, Header: http.Header{"Retry-After": {"600"}}})
		c := srv.Client(client.WithClock(clk.Now, clk.Sleep), client.WithMaxWait(time.Minute))
		_, _ = c.ListPets(context.Background(), petstore.PetFilter{})
		clk.Advance(100 * time.Second)
		_, err := c.GetPet(context.Background(), 1)
		var ra *client.RetryAfterError
		if !errors.As(err, &ra) || ra.RetryAfter != 500*time.Second {
			t.Fatalf("held call: %v (%T), want a RetryAfterError of the 500 s left", err, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests, want 1: the held call sends nothing", n)
		}
	})

	t.Run("an answer that asked for no wait", func(t *testing.T) {
		t.Parallel()
		srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
		srv.Inject(petstoretest.Fault{Status: 500})
		c := srv.Client(client.WithMaxAttempts(1))
		_, err := c.ListPets(context.Background(), petstore.PetFilter{})
		if ra := (*client.RetryAfterError)(nil); errors.As(err, &ra) {
			t.Fatalf("error %v carries a RetryAfter the server never sent", err)
		}
	})
}

// TestKeyInUseWaitsRetryAfter: a create whose Idempotency-Key is still
// being processed (an earlier attempt of the call, on a slow store) is
// 409 idempotency_key_in_use with Retry-After: 1, as httpx answers it.
// The client retries it no sooner than asked: its back-off alone (200
// ms at first) would spend every attempt within the second the first
// request still runs, and fail a create that was going to succeed.
func TestKeyInUseWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	srv.Inject(petstoretest.Fault{Route: "POST /pets", Times: 2,
		Error:  petstore.Errorf(petstore.CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still being processed; retry later"),
		Header: http.Header{"Retry-After": {"1"}}})
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
	if _, err := c.CreatePet(context.Background(), petstore.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(srv), []int{409, 409, 201}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	for i, d := range clk.Sleeps() {
		if d < time.Second {
			t.Errorf("wait %d before a retry: %v, want at least the 1s Retry-After", i+1, d)
		}
	}
}

// TestWaitIsReadAgainstTheAnswersDate: a Retry-After given as an
// HTTP-date, like an X-RateLimit-Reset, names a time on the server's
// clock. The delay it asks for is that time less the answer's Date (RFC
// 9110 §10.2.3), not less the client's clock: a client whose clock runs
// 20 s fast, told to retry at Date + 30 s, must wait 30 s, not 10, or it
// retries inside the wait and its request is refused again (a strike
// towards a ban, after a 429).
func TestWaitIsReadAgainstTheAnswersDate(t *testing.T) {
	t.Parallel()
	serverNow := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	retryAt := serverNow.Add(30 * time.Second)
	tests := []struct {
		name   string
		status int
		header http.Header
	}{
		{"429 Retry-After", http.StatusTooManyRequests, http.Header{"Retry-After": {retryAt.Format(http.TimeFormat)}}},
		{"503 Retry-After", http.StatusServiceUnavailable, http.Header{"Retry-After": {retryAt.Format(http.TimeFormat)}}},
		{"429 X-RateLimit-Reset", http.StatusTooManyRequests, http.Header{
			"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(retryAt.Unix(), 10)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var answered atomic.Bool
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if answered.Swap(true) {
					w.Write([]byte("[]"))
					return
				}
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				w.Header().Set("Date", serverNow.Format(http.TimeFormat))
				w.WriteHeader(tt.status)
				w.Write([]byte(`{"code":"rate_limited","message":"slow down"}`))
			}))
			t.Cleanup(api.Close)
			clk := testenv.NewClock(serverNow.Add(20 * time.Second)) // the client's clock runs 20 s fast
			c, err := client.New(api.URL+"/v1", "psk_key", client.WithHTTPClient(api.Client()),
				client.WithClock(clk.Now, clk.Sleep), client.WithBackoff(time.Millisecond, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
				t.Fatal(err)
			}
			if got, want := clk.Sleeps(), []time.Duration{30 * time.Second}; !slices.Equal(got, want) {
				t.Fatalf("waits %v before the retry, want %v", got, want)
			}
		})
	}
}
