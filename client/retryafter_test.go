package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
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
