package httpx

import (
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/httpcode"
)

// StatusOf returns the HTTP status of an error code (400 for
// invalid_request, ...), or 500 for an unknown code: the one table from
// codes to statuses, which every Error body's status follows.
func StatusOf(code string) int { return httpcode.Status(code) }

// CodeOf returns the general code of an HTTP status ("conflict" for 409,
// "internal" for another 5xx, "invalid_request" for another 4xx), for
// answers that carry no Error body.
func CodeOf(status int) string { return httpcode.Code(status) }

// ErrorStatus returns the HTTP status WriteError answers err with: StatusOf
// its code, 500 for an error that is not an application error, 200 for nil.
func ErrorStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return StatusOf(petstore.ErrorCode(err))
}
