package httpx_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// TestStatusTable: every code has a 4xx or 5xx, statuses map back to the
// general code, and an Error body's status is always its code's, whatever
// the error value held.
func TestStatusTable(t *testing.T) {
	for _, code := range petstore.Codes() {
		if s := httpx.StatusOf(code); s < 400 {
			t.Errorf("code %s maps to status %d", code, s)
		}
	}
	for status, code := range map[int]string{409: petstore.CodeConflict, 429: petstore.CodeRateLimited, 418: petstore.CodeInvalidRequest, 502: petstore.CodeInternal, 503: petstore.CodeUnavailable} {
		if got := httpx.CodeOf(status); got != code {
			t.Errorf("CodeOf(%d) = %q, want %q", status, got, code)
		}
	}
	app := petstore.Errorf(petstore.CodeNotFound, "pet %d not found", 7)
	for err, want := range map[error]int{
		nil: 200, app: 404, fmt.Errorf("get: %w", app): 404,
		errors.New("pq: connection reset"):                                    500,
		&petstore.Error{Code: petstore.CodeRateLimited, Message: "slow down"}: 429,
	} {
		if got := httpx.ErrorStatus(err); got != want {
			t.Errorf("ErrorStatus(%v) = %d, want %d", err, got, want)
		}
	}

	// An error value whose Status disagrees with its code is answered by
	// the code.
	rec := httptest.NewRecorder()
	httpx.WriteError(rec, httptest.NewRequest("GET", "/v1/pets", nil), &petstore.Error{Code: petstore.CodeConflict, Message: "taken", Status: 200})
	var body petstore.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 409 || body.Status != 409 || body.Code != petstore.CodeConflict {
		t.Fatalf("answered %d with %+v, want 409 conflict", rec.Code, body)
	}
}
