// Package httpcode is the one table from petstore error codes to HTTP
// statuses. httpx answers with it (and exports it as httpx.StatusOf and
// httpx.CodeOf); the client reads answers with it without depending on
// the server's package.
package httpcode

import (
	"net/http"

	"github.com/petstorekit/petstore"
)

var statusByCode = map[string]int{
	petstore.CodeInvalidRequest:       http.StatusBadRequest,
	petstore.CodeUnauthorized:         http.StatusUnauthorized,
	petstore.CodePlanRequired:         http.StatusForbidden,
	petstore.CodeNotFound:             http.StatusNotFound,
	petstore.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	petstore.CodeConflict:             http.StatusConflict,
	petstore.CodeDeployRequired:       http.StatusConflict,
	petstore.CodeIdempotencyKeyInUse:  http.StatusConflict,
	petstore.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	petstore.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	petstore.CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	petstore.CodeRateLimited:          http.StatusTooManyRequests,
	petstore.CodeAPIKeyBanned:         http.StatusTooManyRequests,
	petstore.CodeInternal:             http.StatusInternalServerError,
	petstore.CodeUnavailable:          http.StatusServiceUnavailable,
}

// Status returns the HTTP status of an error code, or 500 for a code the
// library does not know.
func Status(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Code returns the general code of an HTTP status: the first code in
// petstore.Codes that maps to it ("conflict" for 409), "internal" for
// another 5xx and "invalid_request" for another 4xx.
func Code(status int) string {
	for _, code := range petstore.Codes() {
		if Status(code) == status {
			return code
		}
	}
	if status >= 500 {
		return petstore.CodeInternal
	}
	return petstore.CodeInvalidRequest
}
