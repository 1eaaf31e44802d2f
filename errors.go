package petstore

import (
	"errors"
	"fmt"
)

// Error codes. Every error the library returns to a client carries one of
// these codes; httpx.StatusOf, the one table of HTTP statuses, maps each to
// the status of its answer (noted beside each code).
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

// Codes returns every error code the library uses, in a stable order.
func Codes() []string {
	return []string{
		CodeInvalidRequest, CodeUnauthorized, CodePlanRequired, CodeNotFound,
		CodeMethodNotAllowed, CodeConflict, CodeDeployRequired, CodeIdempotencyKeyInUse,
		CodePayloadTooLarge, CodeUnsupportedMediaType, CodeIdempotencyKeyReused,
		CodeRateLimited, CodeAPIKeyBanned, CodeInternal, CodeUnavailable,
	}
}

// Error is the application error returned by every service and store, and
// the JSON body of every error response. Its Message is safe to show to a
// client; anything that is not an *Error is reported as CodeInternal.
//
// Status is the HTTP status of the answer that carried the error: httpx
// sets it from Code when it writes the error (so a body's status never
// disagrees with its code), and the client sets it from the answer it
// read. An error that never crossed HTTP has none (0); the library itself
// decides by Code only.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status,omitempty"`
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

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of an application error, "" for nil, and
// CodeInternal for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of an application error, "" for nil, and
// a generic message for any other error so internals never reach a client.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "Internal error."
}

// AsError converts any error into the *Error a client may see: application
// errors are returned as they are, anything else becomes CodeInternal with a
// generic message. It returns nil for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Code: CodeInternal, Message: ErrorMessage(err)}
}
