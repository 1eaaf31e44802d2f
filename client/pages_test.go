package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestAllStopsAtALoopOfPages: a server whose next links lead back to a
// page already read (a → b → a, or a page to itself) ends All with an
// error after each page once, instead of yielding the same pets forever.
// The error names the link without the base URL's password.
func TestAllStopsAtALoopOfPages(t *testing.T) {
	for _, loop := range []map[string]string{
		{"": "a", "a": "b", "b": "a"},
		{"": "a", "a": "a"},
	} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cursor := r.URL.Query().Get("cursor")
			w.Header().Set("Link", fmt.Sprintf(`</v1/pets?cursor=%s>; rel="next"`, loop[cursor]))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `[{"id":%d,"name":"page %s","categoryId":1,"status":"available"}]`, len(cursor)+1, cursor)
		}))
		base := strings.Replace(api.URL, "://", "://user:s3cret@", 1) + "/v1"
		c, err := client.New(base, "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var last error
		for pet, err := range c.All(context.Background(), petstore.PetFilter{}) {
			if err != nil {
				last = err
				break
			}
			if names = append(names, pet.Name); len(names) > 10 {
				break
			}
		}
		api.Close()
		if len(names) != len(loop) || last == nil || !strings.Contains(last.Error(), "already read") {
			t.Errorf("links %v: All yielded %q, then %v; want each page once, then an error saying the link leads back", loop, names, last)
		}
		if last != nil && strings.Contains(last.Error(), "s3cret") {
			t.Errorf("the error shows the base URL's password: %v", last)
		}
	}
}

// TestNextLinkAfterARedirect: a relative next link is relative to the
// page it came with (RFC 8288), which after a redirect is the URL the
// client was sent to, not the one it asked for. Here net/http's
// ServeMux redirects /v1/pets to /v1/pets/, whose link "./?cursor=2"
// means /v1/pets/?cursor=2; read against /v1/pets it would be
// /v1/?cursor=2, which the API does not serve.
func TestNextLinkAfterARedirect(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/pets/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			w.Header().Set("Link", `<./?cursor=2>; rel="next"`)
			fmt.Fprint(w, `[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]`)
			return
		}
		fmt.Fprint(w, `[{"id":2,"name":"Tom","categoryId":1,"status":"available"}]`)
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	c, err := client.New(api.URL+"/v1", "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()), client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for pet, err := range c.All(context.Background(), petstore.PetFilter{}) {
		if err != nil {
			t.Fatalf("All after %q: %v", names, err)
		}
		names = append(names, pet.Name)
	}
	if got, want := strings.Join(names, " "), "Rex Tom"; got != want {
		t.Fatalf("All yielded %q, want %q", got, want)
	}
}

// TestAllIteratesAgain: the sequence All returns walks every page each
// time it is ranged over, as iterators do unless documented single-use,
// and from the first page again after a loop that stopped early.
func TestAllIteratesAgain(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithoutRateLimits(),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1}, petstore.NewPet{Name: "Kit", CategoryID: 1}))
	c := srv.Client()
	all := c.All(context.Background(), petstore.PetFilter{Limit: 2})
	walk := func(stopAfter int) string {
		var names []string
		for pet, err := range all {
			if err != nil {
				t.Fatalf("All after %q: %v", names, err)
			}
			if names = append(names, pet.Name); len(names) == stopAfter {
				break
			}
		}
		return strings.Join(names, " ")
	}
	for i, tc := range []struct {
		stopAfter int
		want      string
	}{{0, "Rex Tom Kit"}, {0, "Rex Tom Kit"}, {3, "Rex Tom Kit"}, {2, "Rex Tom"}, {0, "Rex Tom Kit"}} {
		if got := walk(tc.stopAfter); got != tc.want {
			t.Fatalf("walk %d over the same All: %q, want %q", i+1, got, tc.want)
		}
	}
}

// TestAllSeesALoopAsTheServerDoes: All's guard against next links that
// lead back to a page already read compares the requests the server gets,
// not the links' text: the same page written with its query parameters in
// another order, escaped differently, with its default port, in another
// case or Unicode form of the host, with a fragment, or at the URL a
// redirect led to, is a loop, which ends All after each page once; so is
// an empty link ("<>"), which names the page it came with. Pages
// the server tells apart ("a+b" and "a%2Bb" are two cursors) are not.
func TestAllSeesALoopAsTheServerDoes(t *testing.T) {
	t.Parallel()
	const first = "http://example.com/v1/pets?limit=1" // what All asks for first
	tests := []struct {
		name  string
		base  string            // the client's base URL
		links map[string]string // cursor → its page's next link
		pages int               // pages All yields
		loop  bool              // whether it then ends with the loop's error
	}{
		{"query in another order", "http://example.com/v1",
			map[string]string{"": "/v1/pets?cursor=a&limit=1", "a": "/v1/pets?limit=1&cursor=a"}, 2, true},
		{"back to the first page, path escaped", "http://example.com/v1",
			map[string]string{"": "/v1/pets?limit=1&cursor=a", "a": "/v1/%70ets?limit=1"}, 2, true},
		{"query escaped", "http://example.com/v1",
			map[string]string{"": "/v1/pets?limit=1&cursor=a", "a": "/v1/pets?limit=1&cursor=%61"}, 2, true},
		{"default port and host case", "http://example.com/v1",
			map[string]string{"": "http://EXAMPLE.com:80/v1/pets?limit=1"}, 1, true},
		{"Unicode host", "http://xn--bcher-kva.example/v1",
			map[string]string{"": "http://bücher.example/v1/pets?limit=1"}, 1, true},
		{"a fragment, which is not sent", "http://example.com/v1",
			map[string]string{"": "/v1/pets?limit=1#top"}, 1, true},
		{"back to where a redirect led", "http://example.com/old/v1",
			map[string]string{"": "/v1/pets?limit=1&cursor=a", "a": first}, 2, true},
		{"an escape's hex digits in another case", "http://example.com/v1",
			map[string]string{"": "/v1/pets/x%2fy?limit=1", "x%2fy": "/v1/pets/x%2Fy?limit=1"}, 2, true},
		{"an empty link: the page itself (RFC 3986)", "http://example.com/v1",
			map[string]string{"": ""}, 1, true},
		{"an empty link on a later page", "http://example.com/v1",
			map[string]string{"": "/v1/pets?limit=1&cursor=a", "a": ""}, 2, true},
		{"cursors the server tells apart", "http://example.com/v1",
			map[string]string{"": "/v1/pets?limit=1&cursor=a+b", "a b": "/v1/pets?limit=1&cursor=a%2Bb"}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			mux.HandleFunc("/old/v1/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, strings.Replace(r.URL.RequestURI(), "/old", "", 1), http.StatusMovedPermanently)
			})
			mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
				// The page: what follows /v1/pets/ as sent, else its cursor.
				page := r.URL.Query().Get("cursor")
				if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/pets/"); ok {
					page = rest
				}
				if link, ok := tt.links[page]; ok {
					w.Header().Set("Link", "<"+link+`>; rel="next"`)
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode([]petstore.Pet{{ID: 1, Name: "page " + page, CategoryID: 1}})
			})
			api := httptest.NewServer(mux)
			t.Cleanup(api.Close)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, api.Listener.Addr().String())
			}
			t.Cleanup(tr.CloseIdleConnections)
			c, err := client.New(tt.base, "psk_loop", client.WithHTTPClient(&http.Client{Transport: tr}), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var last error
			for pet, err := range c.All(context.Background(), petstore.PetFilter{Limit: 1}) {
				if err != nil {
					last = err
					break
				}
				if names = append(names, pet.Name); len(names) > 10 {
					break
				}
			}
			if len(names) != tt.pages || (last != nil) != tt.loop || (last != nil && !strings.Contains(last.Error(), "already read")) {
				t.Fatalf("links %q: All yielded %q, then %v; want %d pages, then loop error %v", tt.links, names, last, tt.pages, tt.loop)
			}
		})
	}
}

// TestListPetsRefusesALinkToItself: a page whose next link names the page
// itself (an empty link, or its own URL) would hand a caller paging with
// NextCursor the same cursor forever; ListPets reports the loop instead.
func TestListPetsRefusesALinkToItself(t *testing.T) {
	t.Parallel()
	for _, link := range []string{"", "/v1/pets?cursor=a"} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "<"+link+`>; rel="next"`)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]`)
		}))
		c, err := client.New(api.URL+"/v1", "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()), client.WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		page, err := c.ListPets(context.Background(), petstore.PetFilter{Cursor: "a"})
		api.Close()
		if err == nil || !strings.Contains(err.Error(), "leads back") {
			t.Errorf("link %q: ListPets = %+v, %v; want an error saying the link leads back to the page", link, page, err)
		}
	}
}

// TestUnreadableNextLinkIsAnError: a page whose next link does not parse
// (a Link header without its closing ">", or with text after its
// parameters), or whose next link carries no cursor that parses, does not
// say it is the last page: All and ListPets report it instead of ending
// the list there as if it were complete.
func TestUnreadableNextLinkIsAnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, link string
		all        bool // whether All fails too: it follows a link whose cursor does not parse as it is
	}{
		{"no closing bracket", `</v1/pets?cursor=b; rel="next"`, true},
		{"text after the parameters", `</v1/pets?cursor=b>; rel="next" more`, true},
		{"no angle brackets", `/v1/pets?cursor=b; rel="next"`, true},
		{"a cursor that does not parse", `</v1/pets?cursor=%zz>; rel="next"`, false},
		{"no cursor", `</v1/pets?limit=1>; rel="next"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("cursor") == "" {
					w.Header().Set("Link", tt.link)
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]`)
			}))
			t.Cleanup(api.Close)
			c, err := client.New(api.URL+"/v1", "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()), client.WithMaxAttempts(1))
			if err != nil {
				t.Fatal(err)
			}
			if page, err := c.ListPets(context.Background(), petstore.PetFilter{}); err == nil {
				t.Errorf("Link %s: ListPets = %+v, no error; want an error: the next page cannot be named", tt.link, page)
			}
			if !tt.all {
				return
			}
			var last error
			n := 0
			for _, err := range c.All(context.Background(), petstore.PetFilter{}) {
				if last = err; err != nil || n > 10 {
					break
				}
				n++
			}
			if last == nil {
				t.Errorf("Link %s: All yielded %d pets, then ended without an error; want an error: the list may go on", tt.link, n)
			}
		})
	}
}
