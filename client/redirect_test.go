package client_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
		c, err := client.New(movedAPI(t, srv), srv.Key())
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
	old := movedAPI(t, srv)
	moved := strings.TrimSuffix(old, "/old/v1")
	c, err := client.New(old, srv.Key())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreatePet(context.Background(), petstore.NewPet{Name: "Tom", CategoryID: 1})
	if e := asError(t, err); e.Status != http.StatusMovedPermanently || !strings.Contains(e.Message, "redirect to "+moved+"/v1/pets") || !strings.Contains(e.Message, "as a GET") {
		t.Fatalf("error %+v, want the 301 reported as a redirect to %s/v1/pets that would turn the POST into a GET", e, moved)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("the API got %d requests (the first %s %s), want none", len(reqs), reqs[0].Method, reqs[0].Path)
	}
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("a list through the same redirect: %v", err)
	}
}

// TestOriginIsComparedAsBrowsersDo: the key stays on the base URL's
// origin, which is its scheme, host and port as the URL standard and
// browsers compare them: a host name's case does not matter, nor whether
// an internationalized one is written in Unicode or punycode (IDNA), and
// a default port (443 for https, 80 for http) is the same whether
// written or not. A redirect, or a next link, to the base's own origin
// written another way is followed, not refused as leaving it.
func TestOriginIsComparedAsBrowsersDo(t *testing.T) {
	t.Parallel()
	const key = "psk_origin"
	tests := []struct {
		name string
		tls  bool
		base string // the base URL's origin, as the caller wrote it
		to   string // where the redirect and the next link lead, the same origin
	}{
		{"host case", true, "https://EXAMPLE.com", "https://example.COM"},
		{"https port written", true, "https://example.com:443", "https://example.com"},
		{"https port left out", true, "https://example.com", "https://example.com:443"},
		{"http port written", false, "http://Example.com:80", "http://example.com"},
		// The URL standard (and net/http, which dials and names the
		// host so) reads a host name in its IDNA ASCII form.
		{"punycode to Unicode", false, "http://xn--bcher-kva.example", "http://bücher.example"},
		{"Unicode to punycode", false, "http://Bücher.example", "http://XN--BCHER-KVA.example"},
		// An IPv6 address is one host however it is written, as the
		// URL standard serializes it; an IPv4-mapped one is another.
		{"IPv6 written out", false, "http://[::1]", "http://[0:0:0:0:0:0:0:1]"},
		{"IPv6 in capitals", false, "http://[FE80::A]:80", "http://[fe80:0::a]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.to+strings.TrimPrefix(r.URL.RequestURI(), "/old"), http.StatusMovedPermanently)
			})
			mux.HandleFunc("GET /v1/pets", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+key {
					http.Error(w, `{"code":"unauthorized","message":"no key"}`, http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				pet := petstore.Pet{ID: 2, Name: "Tom", CategoryID: 1}
				if r.URL.Query().Get("cursor") == "" {
					w.Header().Set("Link", "<"+tt.to+`/v1/pets?cursor=2>; rel="next"`)
					pet = petstore.Pet{ID: 1, Name: "Rex", CategoryID: 1}
				}
				json.NewEncoder(w).Encode([]petstore.Pet{pet})
			})
			var api *httptest.Server
			if tt.tls {
				api = httptest.NewTLSServer(mux) // its certificate names example.com
			} else {
				api = httptest.NewServer(mux)
			}
			t.Cleanup(api.Close)
			// Every host name and port dials the test server.
			tr := api.Client().Transport.(*http.Transport).Clone()
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, api.Listener.Addr().String())
			}
			t.Cleanup(tr.CloseIdleConnections)
			c, err := client.New(tt.base+"/old/v1", key, client.WithHTTPClient(&http.Client{Transport: tr}), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for p, err := range c.All(context.Background(), petstore.PetFilter{}) {
				if err != nil {
					t.Fatalf("All from %s/old/v1, redirected and linked to %s: %v", tt.base, tt.to, err)
				}
				got = append(got, p.Name)
			}
			if want := []string{"Rex", "Tom"}; !slices.Equal(got, want) {
				t.Fatalf("All = %v, want %v", got, want)
			}
		})
	}
}

// movedAPI serves srv's API under /v1/ and answers every path under
// /old/v1/ with a 301 to the same path without /old; it returns the old
// base URL.
func movedAPI(t *testing.T, srv *petstoretest.Server) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(r.URL.RequestURI(), "/old", "", 1), http.StatusMovedPermanently)
	})
	mux.Handle("/v1/", srv.Handler())
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	return api.URL + "/old/v1"
}

// TestTrailingDotIsAnotherOrigin: a host name with a trailing dot is
// another host for the URL standard, browsers and net/http (which drops
// Authorization on a redirect between them): "api.example.com" may be
// looked up under a search domain, "api.example.com." never is. The key
// goes to neither from the other; the redirect is reported instead, and a
// next link there is refused.
func TestTrailingDotIsAnotherOrigin(t *testing.T) {
	t.Parallel()
	const key = "psk_trailing_dot"
	for _, tt := range []struct{ base, to string }{
		{"http://example.com", "http://example.com."},
		{"http://example.com.", "http://example.com"},
	} {
		t.Run(tt.base+" to "+tt.to, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var keyed []string // hosts that received the key
			mux := http.NewServeMux()
			mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.to+strings.TrimPrefix(r.URL.RequestURI(), "/old"), http.StatusFound)
			})
			mux.HandleFunc("GET /v1/pets", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "" {
					mu.Lock()
					keyed = append(keyed, r.Host)
					mu.Unlock()
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Link", "<"+tt.to+`/v1/pets?cursor=2>; rel="next"`)
				w.Write([]byte("[]"))
			})
			api := httptest.NewServer(mux)
			t.Cleanup(api.Close)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, api.Listener.Addr().String())
			}
			t.Cleanup(tr.CloseIdleConnections)
			hc := &http.Client{Transport: tr}
			c, err := client.New(tt.base+"/old/v1", key, client.WithHTTPClient(hc), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListPets(context.Background(), petstore.PetFilter{})
			if e := asError(t, err); e.Status != http.StatusFound || !strings.Contains(e.Message, "not followed") {
				t.Fatalf("error %+v, want the 302 to %s reported as not followed", e, tt.to)
			}
			c, err = client.New(tt.base+"/v1", key, client.WithHTTPClient(hc), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range c.All(context.Background(), petstore.PetFilter{}) {
				if err == nil || !strings.Contains(err.Error(), "leaves") {
					t.Fatalf("All: %v, want the next link to %s refused as leaving the origin", err, tt.to)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if want := []string{strings.TrimPrefix(tt.base, "http://")}; !slices.Equal(keyed, want) {
				t.Fatalf("the key reached the hosts %q, want only %q", keyed, want)
			}
		})
	}
}

// TestRedirectKeepsTheBaseURLsUserInfo: without an API key, the base
// URL's user info is the credential (net/http sends it as Basic
// authentication), say for a proxy in front of a staging API. net/http
// sends it with the first request only, so a redirect within the base
// URL's origin lost it, and the call failed with the proxy's 401; like
// the key, it now goes on within the origin, and only there.
func TestRedirectKeepsTheBaseURLsUserInfo(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutRateLimits(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1}))
	var mu sync.Mutex
	var leaked []string // Authorization headers another origin got
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]"))
	}))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	var api *httptest.Server
	// Locations and next links are absolute, without user info, as
	// servers write them: a relative one keeps it.
	mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, api.URL+strings.Replace(r.URL.RequestURI(), "/old", "", 1), http.StatusMovedPermanently)
	})
	mux.HandleFunc("/away/v1/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/pets", http.StatusFound)
	})
	// The proxy checks the user info and passes the key on to the API.
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "staging" || pass != "s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"code":"unauthorized","message":"the proxy wants its password"}`))
			return
		}
		r.Header.Set("Authorization", "Bearer "+srv.Key())
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if link := rec.Header().Get("Link"); link != "" {
			w.Header().Set("Link", strings.Replace(link, "</", "<"+api.URL+"/", 1))
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	api = httptest.NewServer(mux)
	t.Cleanup(api.Close)
	base := strings.Replace(api.URL, "://", "://staging:s3cret@", 1)

	c, err := client.New(base+"/old/v1", "", client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for p, err := range c.All(context.Background(), petstore.PetFilter{Limit: 1}) {
		if err != nil {
			t.Fatalf("All through a redirect within the origin, after %q: %v", names, err)
		}
		names = append(names, p.Name)
	}
	if want := []string{"Rex", "Tom"}; !slices.Equal(names, want) {
		t.Fatalf("All = %q, want %q", names, want)
	}

	c, err = client.New(base+"/away/v1", "", client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPets(context.Background(), petstore.PetFilter{})
	if e := asError(t, err); e.Status != http.StatusFound {
		t.Fatalf("error %+v, want the 302 to another origin reported", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Fatalf("another origin got requests with Authorization %q", leaked)
	}
}

// TestRedirectLoopIsNotRetried: a redirect loop (a proxy misconfigured
// after a move) answers every attempt the same, yet net/http's "stopped
// after 10 redirects" was taken for a network error: the client sent the
// loop's ten requests again on each of its attempts, waiting its back-off
// between them, and IsRetryable said to try again later. The call now
// fails after one round, with an error that is not retryable.
func TestRedirectLoopIsNotRetried(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/pets", func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Redirect(w, r, "/v1/pets/", http.StatusFound)
	})
	mux.HandleFunc("/v1/pets/", func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Redirect(w, r, "/v1/pets", http.StatusFound)
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	clk := newClock()
	c, err := client.New(api.URL+"/v1", "psk_loop", client.WithClock(clk.Now, clk.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPets(context.Background(), petstore.PetFilter{})
	if err == nil || !strings.Contains(err.Error(), "redirects") || client.IsRetryable(err) {
		t.Fatalf("error %v (retryable %v), want the redirect loop named, not retryable", err, client.IsRetryable(err))
	}
	if n, waits := requests.Load(), clk.Sleeps(); n != 10 || len(waits) != 0 {
		t.Fatalf("%d requests, waits %v; want the loop's 10 requests once, no wait", n, waits)
	}
}
