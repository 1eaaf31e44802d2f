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

// TestRequestLogKeepsTheQueryAsSent: a query the API refuses as
// malformed (limit=%, a ";" separator) is logged as sent in RawQuery,
// where Query, which holds the pairs that parse, has none of it.
func TestRequestLogKeepsTheQueryAsSent(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		srv := petstoretest.NewServer(t, opts...)
		for _, raw := range []string{"limit=%", "status=sold;limit=1", "limit=5&status=sold"} {
			do(t, srv, "GET", "/pets?"+raw, "")
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests logged, want 3", len(reqs))
		}
		for i, tt := range []struct {
			status   int
			rawQuery string
			query    string // Query encoded
		}{
			{http.StatusBadRequest, "limit=%", ""},
			{http.StatusBadRequest, "status=sold;limit=1", ""},
			{http.StatusOK, "limit=5&status=sold", "limit=5&status=sold"},
		} {
			if r := reqs[i]; r.Status != tt.status || r.RawQuery != tt.rawQuery || r.Query.Encode() != tt.query {
				t.Errorf("logged %d, RawQuery %q, Query %q; want %d, %q, %q", r.Status, r.RawQuery, r.Query.Encode(), tt.status, tt.rawQuery, tt.query)
			}
		}
	})
}
