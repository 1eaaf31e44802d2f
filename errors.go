package petstore

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes. Every error the library returns to a client carries one of
// these codes; the table in statusByCode maps each to its HTTP status.
const (
	CodeInvalidRequest       = "invalid_request"        // 400: bad body, parameter, cursor or domain name
	CodeUnauthorized         = "unauthorized"           // 401: missing or invalid key
	CodePlanRequired         = "plan_required"          // 403: feature needs a higher plan
	CodeNotFound             = "not_found"              // 404: unknown resource or path
	CodeMethodNotAllowed     = "method_not_allowed"     // 405: wrong method
	CodeConflict             = "conflict"               // 409: name held by another project, etc.
	CodeDeployRequired       = "deploy_required"        // 409: custom domain on a project without a deploy
	CodeIdempotencyKeyInUse  = "idempotency_key_in_use" // 409: same Idempotency-Key still being processed
	CodePayloadTooLarge      = "payload_too_large"      // 413: body over the limit
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: body not JSON
	CodeIdempotencyKeyReused = "idempotency_key_reused" // 422: same Idempotency-Key, different body
	CodeRateLimited          = "rate_limited"           // 429: over the plan's window
	CodeAPIKeyBanned         = "api_key_banned"         // 429: temporarily banned
	CodeInternal             = "internal"               // 500: anything unexpected
	CodeUnavailable          = "unavailable"            // 503: database or limiter store down
)

var statusByCode = map[string]int{
	CodeInvalidRequest:       http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodePlanRequired:         http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeConflict:             http.StatusConflict,
	CodeDeployRequired:       http.StatusConflict,
	CodeIdempotencyKeyInUse:  http.StatusConflict,
	CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeAPIKeyBanned:         http.StatusTooManyRequests,
	CodeInternal:             http.StatusInternalServerError,
	CodeUnavailable:          http.StatusServiceUnavailable,
}

// Codes returns every error code the library uses, in a stable order.
func Codes() []string {
	return []string{
		CodeInvalidRequest, CodeUnauthorized, CodePlanRequired, CodeNotFound,
		CodeMethodNotAllowed, CodeConflict, CodeDeployRequired, CodeIdempotencyKeyInUse,
		CodePayloadTooLarge, CodeUnsupportedMediaType, CodeIdempotencyKeyReused,
		CodeRateLimited, CodeAPIKeyBanned, CodeInternal, CodeUnavailable,
	}
}

// StatusOf returns the HTTP status for an error code, or 500 for a code
// the library does not know.
func StatusOf(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeOf returns the general code of an HTTP status: the first code in
// Codes that maps to it ("conflict" for 409), "internal" for another 5xx
// and "invalid_request" for another 4xx. Clients and fakes use it for
// responses that carry no Error body.
func CodeOf(status int) string {
	for _, code := range Codes() {
		if StatusOf(code) == status {
			return code
		}
	}
	if status >= 500 {
		return CodeInternal
	}
	return CodeInvalidRequest
}

// Error is the application error returned by every service and store, and
// the JSON body of every error response. Its Message is safe to show to a
// client; anything that is not an *Error is reported as CodeInternal.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("petstore: %s: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &petstore.Error{Code: petstore.CodeNotFound}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf returns an *Error with the given code, the status that code maps
// to, and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Status: StatusOf(code)}
}

// ErrorCode returns the code of an application error, "" for nil, and
// CodeInternal for any other error.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of an application error, "" for nil, and
// a generic message for any other error so internals never reach a client.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	}
	return "Internal error."
}

// ErrorStatus returns the HTTP status of err: the status an application
// error carries (or its code maps to), 500 for any other error, 200 for nil.
func ErrorStatus(err error) int {
	var e *Error
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &e):
		if e.Status != 0 {
			return e.Status
		}
		return StatusOf(e.Code)
	}
	return http.StatusInternalServerError
}

// AsError converts any error into the *Error a client may see: application
// errors are returned as they are, anything else becomes CodeInternal with a
// generic message. It returns nil for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Status == 0 {
			c := *e
			c.Status = StatusOf(c.Code)
			return &c
		}
		return e
	}
	return &Error{Code: CodeInternal, Message: ErrorMessage(err), Status: http.StatusInternalServerError}
}
