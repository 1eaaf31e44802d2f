package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestRedirectKeepsKeyHome: the key goes only to the base URL's scheme
// and host, as with Link rel="next". Go's http.Client forwards
// Authorization on a redirect to the same host name, whatever the port or
// scheme, so a redirect to another port (another service) or from https
// to http (the key in clear text) must not be followed; the client
// reports the redirect instead. A redirect within the base's origin is
// still followed.
func TestRedirectKeepsKeyHome(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string // Authorization headers the other origin received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]"))
	}))
	t.Cleanup(other.Close)

	tests := []struct {
		name string
		tls  bool
	}{
		{"http to another port", false},
		{"https to http", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
			})
			var api *httptest.Server
			if tt.tls {
				api = httptest.NewTLSServer(h)
			} else {
				api = httptest.NewServer(h)
			}
			t.Cleanup(api.Close)
			c, err := client.New(api.URL+"/v1", "psk_PLANTEDsecret", client.WithHTTPClient(api.Client()), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListPets(context.Background(), petstore.PetFilter{})
			mu.Lock()
			defer mu.Unlock()
			for _, a := range seen {
				if strings.Contains(a, "PLANTED") {
					t.Fatalf("the key reached %s after a redirect from %s", other.URL, api.URL)
				}
			}
			if e := asError(t, err); e.Status != http.StatusFound || !strings.Contains(e.Message, "redirect to "+other.URL+", not followed") {
				t.Fatalf("error %+v, want the 302 reported as a redirect to %s not followed", e, other.URL)
			}
		})
	}

	t.Run("within the origin", func(t *testing.T) {
		srv := petstoretest.NewServer(t, petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
		mux := http.NewServeMux()
		mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(r.URL.RequestURI(), "/old", "", 1), http.StatusMovedPermanently)
		})
		mux.Handle("/v1/", srv.Handler())
		api := httptest.NewServer(mux)
		t.Cleanup(api.Close)
		c, err := client.New(api.URL+"/old/v1", srv.Key())
		if err != nil {
			t.Fatal(err)
		}
		page, err := c.ListPets(context.Background(), petstore.PetFilter{})
		if err != nil || len(page.Pets) != 1 {
			t.Fatalf("ListPets through a redirect within the origin: %+v, %v", page, err)
		}
	})
}

// TestCreateIsNotRedirectedAsAGet: net/http follows a 301 or 302 to a
// POST with a GET without the body, so a create sent to a base URL that
// moved became a list: no pet, and an error about decoding a list into a
// pet. The client follows no redirect that would change the method; the
// redirect comes back as the error, saying why.
func TestCreateIsNotRedirectedAsAGet(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(r.URL.RequestURI(), "/old", "", 1), http.StatusMovedPermanently)
	})
	mux.Handle("/v1/", srv.Handler())
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	c, err := client.New(api.URL+"/old/v1", srv.Key())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreatePet(context.Background(), petstore.NewPet{Name: "Tom", CategoryID: 1})
	if e := asError(t, err); e.Status != http.StatusMovedPermanently || !strings.Contains(e.Message, "redirect to "+api.URL+"/v1/pets") || !strings.Contains(e.Message, "as a GET") {
		t.Fatalf("error %+v, want the 301 reported as a redirect to %s/v1/pets that would turn the POST into a GET", e, api.URL)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("the API got %d requests (the first %s %s), want none", len(reqs), reqs[0].Method, reqs[0].Path)
	}
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("a list through the same redirect: %v", err)
	}
}
