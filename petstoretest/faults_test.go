package petstoretest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// A Fault's Error answers with its own Status when the Fault sets none,
// even for a code the API does not know.
func TestFaultErrorKeepsItsStatus(t *testing.T) {
	srv := petstoretest.NewServer(t)
	srv.Inject(petstoretest.Fault{Times: 1, Error: &petstore.Error{Code: "maintenance", Message: "down for maintenance", Status: http.StatusServiceUnavailable}})
	resp, err := srv.HTTPClient().Get(srv.URL + "/pets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Fault{Error: {Status: 503}} answered %d, want 503", resp.StatusCode)
	}
}

// FailNext(0, ...) fails no request (a Fault's Times 0 would fail all).
func TestFailNextZeroFailsNone(t *testing.T) {
	srv := petstoretest.NewServer(t)
	srv.FailNext(0, http.StatusServiceUnavailable)
	c := srv.Client(client.WithMaxAttempts(1))
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("FailNext(0, 503) then a request: %v", err)
	}
}

// A request the client gave up on during a Latency fault was never
// answered: the log says 0, not 200.
func TestRequestGivenUpOnIsLoggedUnanswered(t *testing.T) {
	srv := petstoretest.NewServer(t)
	srv.Inject(petstoretest.Fault{Times: 1, Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c := srv.Client(client.WithMaxAttempts(1))
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1}); err == nil {
		t.Fatal("a create held for an hour answered within 50 ms")
	}
	deadline := time.Now().Add(10 * time.Second) // a hang guard: the handler logs once the client has left
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request was never logged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := srv.Requests()[0].Status; got != 0 {
		t.Fatalf("a request never answered is logged with status %d, want 0", got)
	}
}

// An injected 401 carries the challenge every 401 of the real server
// does (RFC 6750), as for a key that was sent and refused, so code that
// reads WWW-Authenticate sees the same answer from the fake.
func TestInjected401HasTheChallenge(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t)
	srv.FailNext(1, http.StatusUnauthorized)
	status, h, _ := do(t, srv, "GET", "/pets", "")
	if got, want := h.Get("WWW-Authenticate"), `Bearer realm="petstore", error="invalid_token"`; status != 401 || got != want {
		t.Fatalf("injected 401: %d, WWW-Authenticate %q; want 401, %q", status, got, want)
	}
	// A Header of the fault's own wins.
	srv.Inject(petstoretest.Fault{Times: 1, Status: 401, Header: http.Header{"Www-Authenticate": {`Bearer realm="other"`}}})
	if _, h, _ := do(t, srv, "GET", "/pets", ""); h.Get("WWW-Authenticate") != `Bearer realm="other"` {
		t.Fatalf("WWW-Authenticate %q, want the fault's own", h.Get("WWW-Authenticate"))
	}
}
