package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProjectSite: the example site escapes the project name and answers
// only its own paths.
func TestProjectSite(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("api")) })
	h := projectSite(`<script>alert(1)</script>`, api)
	cases := []struct {
		method, path string
		status       int
		contains     string
	}{
		{"GET", "/", 200, "&lt;script&gt;"},
		{"HEAD", "/", 200, ""},
		{"POST", "/", 405, "method_not_allowed"},
		{"GET", "/v1/pets", 200, "api"},
		{"GET", "/elsewhere", 404, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.contains) || strings.Contains(rec.Body.String(), "<script>") {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
		})
	}
}
