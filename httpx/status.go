package httpx

import (
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/httpcode"
)

// StatusOf returns the HTTP status every answer with an error of code
// carries (400 for invalid_request, 429 for rate_limited, ...), or 500 for
// a code the library does not know. This is the one table from codes to
// statuses: the Error body's status is always StatusOf its code.
func StatusOf(code string) int { return httpcode.Status(code) }

// CodeOf returns the general code of an HTTP status: the first code in
// petstore.Codes that maps to it ("conflict" for 409), "internal" for
// another 5xx and "invalid_request" for another 4xx. Clients and fakes use
// it for answers that carry no Error body.
func CodeOf(status int) string { return httpcode.Code(status) }

// ErrorStatus returns the HTTP status WriteError answers err with: StatusOf
// its code, 500 for an error that is not an application error, 200 for nil.
func ErrorStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return StatusOf(petstore.ErrorCode(err))
}
