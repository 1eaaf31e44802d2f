package petstoretest_test

import (
	"net/http"
	"testing"

	"github.com/petstorekit/petstore/petstoretest"
)

// TestRequestLogKeepsThePathsEscapes: the API takes /v1/pets/1%2F2 as
// the pet id "1/2" (a 400), not as the path /v1/pets/1/2 (a 404); the
// log tells the two apart with EscapedPath, the path as sent, while Path
// stays the decoded path.
func TestRequestLogKeepsThePathsEscapes(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, opts...)
		escaped, _, _ := do(t, srv, "GET", "/pets/1%2F2", "")
		slash, _, _ := do(t, srv, "GET", "/pets/1/2", "")
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests logged, want 2", len(reqs))
		}
		for i, tt := range []struct {
			status            int
			path, escapedPath string
		}{
			{escaped, "/v1/pets/1/2", "/v1/pets/1%2F2"},
			{slash, "/v1/pets/1/2", "/v1/pets/1/2"},
		} {
			if r := reqs[i]; r.Status != tt.status || r.Path != tt.path || r.EscapedPath != tt.escapedPath {
				t.Errorf("logged %d %q (escaped %q), want %d %q (escaped %q)", r.Status, r.Path, r.EscapedPath, tt.status, tt.path, tt.escapedPath)
			}
		}
		if escaped == slash || escaped != http.StatusBadRequest {
			t.Errorf("GET /v1/pets/1%%2F2: %d, GET /v1/pets/1/2: %d; want the API's 400 for the first", escaped, slash)
		}
	})
}
