package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
)

// TestBaseURLKeepsItsEscapes: a base URL whose path holds an escaped
// slash (a gateway's "/tenants/a%2Fb/v1") is asked at that path, escape
// and all; the escape did not become a slash, a path of another tenant.
func TestBaseURLKeepsItsEscapes(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.RequestURI:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[]`))
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL+"/tenants/a%2Fb/v1", "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{Limit: 5}); err != nil {
		t.Fatal(err)
	}
	if got, want := <-got, "/tenants/a%2Fb/v1/pets?limit=5"; got != want {
		t.Fatalf("request URI %q, want %q", got, want)
	}
}

// TestErrorsNameThePathAsSent: an error about a call names the path the
// request went to, escapes kept, not the decoded path, another one.
func TestErrorsNameThePathAsSent(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html>Sign in</html>`))
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL+"/tenants/a%2Fb/v1", "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPets(context.Background(), petstore.PetFilter{})
	if err == nil || !strings.Contains(err.Error(), "GET /tenants/a%2Fb/v1/pets:") {
		t.Fatalf("error %v, want one naming GET /tenants/a%%2Fb/v1/pets", err)
	}
}
