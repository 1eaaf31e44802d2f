package client_test

import (
	"context"
	"errors"
	"net/http"
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
