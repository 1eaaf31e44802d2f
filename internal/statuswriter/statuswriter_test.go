package statuswriter_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore/internal/statuswriter"
)

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter)
		want    int
	}{
		{"nothing written", func(http.ResponseWriter) {}, 0},
		{"status first", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated); _, _ = w.Write([]byte("x")) }, http.StatusCreated},
		{"body first", func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")); w.WriteHeader(http.StatusTeapot) }, http.StatusOK},
		{"second status ignored", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound); w.WriteHeader(http.StatusOK) }, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &statuswriter.Writer{ResponseWriter: rec}
			tc.handler(w)
			if w.Status != tc.want {
				t.Fatalf("Status = %d, want %d", w.Status, tc.want)
			}
			if tc.want != 0 && rec.Code != tc.want {
				t.Fatalf("the client got %d, want %d", rec.Code, tc.want)
			}
			if http.NewResponseController(w) == nil || w.Unwrap() != rec {
				t.Fatal("Unwrap does not reach the underlying writer")
			}
		})
	}
}
