package petstoretest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestPathsOffTheAPIAreJSON404s: as examples/server does, the fake
// answers the paths http.ServeMux would redirect (/v1, unclean paths
// under it) and those outside the API (/, /v2/pets) with a JSON 404,
// not a redirect with an HTML body, which a client following redirects
// would take to a page the real server never serves, or a text/plain 404.
func TestPathsOffTheAPIAreJSON404s(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, opts...)
		root := strings.TrimSuffix(srv.URL, petstoretest.BasePath)
		for _, path := range []string{"/v1", "/v1//pets", "/v1/./pets", "/x/../v1/pets", "/v2/pets", "/"} {
			req, err := http.NewRequest("GET", root+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = path // keep the path as written: no cleaning by the client
			req.Header.Set("Authorization", "Bearer "+srv.Key())
			resp, err := srv.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e petstore.Error
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(body, &e) != nil || e.Code != petstore.CodeNotFound || e.Status != 404 {
				t.Errorf("GET %s: %d %s %q; want a JSON 404 not_found", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	})
}

// The in-memory transport answers as the loopback port does: the same
// status, body and headers, with the Content-Length and Date a server
// adds to an answer the handler left them off (X-Request-Id differs
// per request, the date's value per second).
func TestNoListenerAnswersAsALoopbackPort(t *testing.T) {
	t.Parallel()
	loop := petstoretest.NewServer(t, petstoretest.WithPets(seeds...))
	mem := petstoretest.NewServer(t, petstoretest.WithPets(seeds...), petstoretest.WithoutListener())
	type answer struct {
		status        int
		contentLength int64
		header        http.Header
		body          string
	}
	send := func(srv *petstoretest.Server, method, path, body string, header http.Header) answer {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if header != nil {
			req.Header = header.Clone()
		}
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		h := resp.Header.Clone()
		if h.Get("Date") != "" {
			h.Set("Date", "set")
		}
		h.Del("X-Request-Id")
		h.Del("X-Ratelimit-Reset") // the window's end, per server
		return answer{resp.StatusCode, resp.ContentLength, h, string(b)}
	}
	etag := send(loop, "GET", "/pets", "", nil).header.Get("Etag")
	send(mem, "GET", "/pets", "", nil) // the same requests to both
	for _, r := range []struct {
		method, path, body string
		header             http.Header
	}{
		{"GET", "/pets", "", nil},
		{"GET", "/pets/1", "", nil},
		{"GET", "/pets/99", "", nil},
		{"HEAD", "/pets", "", nil},
		{"GET", "/pets", "", http.Header{"If-None-Match": {etag}}},
		{"DELETE", "/pets", "", nil},
		{"POST", "/pets", `{"name":"Nemo","categoryId":4}`, http.Header{"Content-Type": {"application/json"}}},
		{"GET", "/pets?limit=100", "", nil},
	} {
		// Both servers take the same requests in the same order, so
		// their rate-limit counters and pets agree.
		want := send(loop, r.method, r.path, r.body, r.header)
		got := send(mem, r.method, r.path, r.body, r.header)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s\nno listener: %+v\nloopback:    %+v", r.method, r.path, got, want)
		}
	}
}

// A Fault with a Route fires only on requests the API would route to it:
// not on a path that is not clean ("/v1//pets", "/v1/./pets"), which the
// API answers with a 404 where http.ServeMux would redirect, nor on one
// that ServeMux would redirect to the Route's subtree ("/v1/pets" for
// "/pets/"). Such a request gets the API's own answer and leaves the
// fault's count for the request it was meant for.
func TestFaultRouteMatchesAsTheAPIRoutes(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		for _, tt := range []struct {
			route, path string // path as sent, not cleaned
			want        int    // the API's answer
			match       string // a path the route does match
		}{
			{"GET /pets", "/v1//pets", http.StatusNotFound, "/pets"},
			{"GET /pets", "/v1/./pets", http.StatusNotFound, "/pets"},
			{"GET /pets", "/x/../v1/pets", http.StatusNotFound, "/pets"},
			{"GET /pets/{petId}", "/v1/pets//1", http.StatusNotFound, "/pets/1"},
			{"GET /pets/{petId}", "/v1/pets/../pets/1", http.StatusNotFound, "/pets/1"},
			{"/pets/", "/v1/pets", http.StatusOK, "/pets/1"},
			{"/pets/{rest...}", "/v1/pets", http.StatusOK, "/pets/1"},
		} {
			srv := petstoretest.NewServer(t, append(opts, petstoretest.WithPets(seeds...))...)
			srv.Inject(petstoretest.Fault{Route: tt.route, Times: 1, Status: http.StatusInternalServerError})
			root := strings.TrimSuffix(srv.URL, petstoretest.BasePath)
			req, err := http.NewRequest("GET", root+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = tt.path // keep the path as written: no cleaning by the client
			req.Header.Set("Authorization", "Bearer "+srv.Key())
			resp, err := srv.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("Route %q, GET %s: %d, want the API's %d", tt.route, tt.path, resp.StatusCode, tt.want)
			}
			if status, _, _ := do(t, srv, "GET", tt.match, ""); status != http.StatusInternalServerError {
				t.Errorf("Route %q, then GET /v1%s: %d, want the fault's 500", tt.route, tt.match, status)
			}
		}
	})
}

// A fault's answer to a HEAD request has no body in no-listener mode
// either: a client reads none, and it gets the Content-Length of the
// body a GET would get, as the loopback port sends it.
func TestNoListenerHeadFaultHasNoBody(t *testing.T) {
	t.Parallel()
	type answer struct {
		status        int
		contentLength int64
		body          string
	}
	head := func(srv *petstoretest.Server, f petstoretest.Fault) answer {
		t.Helper()
		srv.Inject(f)
		req, err := http.NewRequest("HEAD", srv.URL+"/pets", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.ContentLength, string(b)}
	}
	loop := petstoretest.NewServer(t)
	mem := petstoretest.NewServer(t, petstoretest.WithoutListener())
	for _, f := range []petstoretest.Fault{
		{Times: 1, Status: http.StatusServiceUnavailable},
		{Times: 1, Status: http.StatusBadGateway, After: true},
		{Times: 1, Error: &petstore.Error{Code: "maintenance", Message: "down", Status: 503}},
	} {
		want, got := head(loop, f), head(mem, f)
		if got != want || got.body != "" {
			t.Errorf("HEAD with %+v\nno listener: %+v\nloopback:    %+v", f, got, want)
		}
	}
}
