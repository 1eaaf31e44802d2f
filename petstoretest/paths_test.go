package petstoretest_test

import (
	"encoding/json"
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
	for _, mode := range []struct {
		name string
		opts []petstoretest.Option
	}{{"loopback", nil}, {"no listener", []petstoretest.Option{petstoretest.WithoutListener()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := petstoretest.NewServer(t, mode.opts...)
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
}
