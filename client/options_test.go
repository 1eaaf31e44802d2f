package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestWithHTTPClientNilKeepsTheDefault: a nil *http.Client, as a zero
// field of a caller's config gives, means the default, as for
// net/http's own helpers, not a panic on the first call.
func TestWithHTTPClientNilKeepsTheDefault(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c, err := client.New(srv.URL, srv.Key(), client.WithHTTPClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(context.Background(), petstore.PetFilter{})
	if err != nil || len(page.Pets) != 1 {
		t.Fatalf("ListPets = %+v, %v; want Rex", page, err)
	}
}

// TestKeyThatCannotBeSentIsRefused: a key read from a file with its
// trailing newline (or any control character) cannot go in a header;
// net/http refuses every request, and the client used to take that for a
// network error and retry it with backoff on every call. New refuses the
// key, without showing it.
func TestKeyThatCannotBeSentIsRefused(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"psk_PLANTED\n", "psk_PLANTED\r\nX-Evil: 1", "psk_\x00PLANTED", "psk_PLANTED\x7f"} {
		_, err := client.New("https://api.example.com/v1", key)
		if err == nil {
			t.Fatalf("New accepted the key %q", key)
		}
		if strings.Contains(err.Error(), "PLANTED") {
			t.Fatalf("the error shows the key: %v", err)
		}
	}
	if _, err := client.New("https://api.example.com/v1", "psk_ok ok\tok é"); err != nil {
		t.Fatalf("New refused a key net/http can send: %v", err)
	}
}

// WithMaxWait(0) is documented as one attempt, never retried, whatever
// the back-off and the clock.
func TestMaxWaitZeroIsOneAttempt(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	srv.Inject(petstoretest.Fault{Status: 503})
	c := srv.Client(client.WithClock(clk.Now, clk.Sleep), client.WithMaxWait(0), client.WithBackoff(0, 0))
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err == nil {
		t.Fatal("ListPets succeeded against a 503")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1: WithMaxWait(0) is one attempt", n)
	}
}

// TestMaxWaitBoundsASlowAttempt: WithMaxWait bounds the whole call,
// attempts included, not only its waits: an answer that does not come
// (a server that hangs, an HTTP client with no Timeout) ends the call
// once the bound has passed, with an error the client would retry.
func TestMaxWaitBoundsASlowAttempt(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener())
	srv.Inject(petstoretest.Fault{Route: "GET /pets", Latency: time.Hour})
	c := srv.Client(client.WithMaxWait(200 * time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.ListPets(ctx, petstore.PetFilter{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !client.IsRetryable(err) {
			t.Fatalf("error %v after %v, want one the client would retry", err, time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the call still runs after %v with WithMaxWait(200ms)", time.Since(start))
	}
}

// TestUserAgentThatCannotBeSentIsRefused: as for the key, a User-Agent
// with a control character makes net/http refuse every request, which
// the client would take for a network error and retry on every call:
// New refuses it.
func TestUserAgentThatCannotBeSentIsRefused(t *testing.T) {
	t.Parallel()
	for _, ua := range []string{"myapp/2\n", "myapp/2\r\nX-Evil: 1", "my\x00app"} {
		if _, err := client.New("https://api.example.com/v1", "psk_ok", client.WithUserAgent(ua)); err == nil {
			t.Fatalf("New accepted the User-Agent %q", ua)
		}
	}
	if _, err := client.New("https://api.example.com/v1", "psk_ok", client.WithUserAgent("myapp/2 (+https://example.com)\tx")); err != nil {
		t.Fatalf("New refused a User-Agent net/http can send: %v", err)
	}
}
