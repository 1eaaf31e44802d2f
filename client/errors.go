package client

import (
	"time"

	"github.com/petstorekit/petstore"
)

// RetryAfterError is the error of a call the client gave up on although
// the server had said when to try again: a 429 (rate_limited or
// api_key_banned), a 5xx or an idempotency_key_in_use whose wait was
// past WithMaxWait or the context's deadline, or that came back on the
// last attempt. A call held back by another call's 429 returns one too.
// Err is the answer's error, which errors.As also finds under it:
//
//	var ra *client.RetryAfterError
//	if errors.As(err, &ra) {
//		job.RetryIn(ra.RetryAfter)
//	}
type RetryAfterError struct {
	// Err is the error the server answered, with its Status.
	Err *petstore.Error
	// RetryAfter is how long, from when the call returned, the server
	// asked the client to wait before sending again: its Retry-After (at
	// most 48 hours), or for a 429 without one the time until
	// X-RateLimit-Reset (else the client's backoff). After a 429 the
	// client's own calls send nothing before then, except after
	// api_key_banned: a ban refuses only what spends the plan's quota,
	// and counts nothing, so the client's conditional requests (WithCache)
	// still get their 304s.
	RetryAfter time.Duration
}

// Error is the message of Err and the wait, such as
// "petstore: rate_limited: …; retry after 30s".
func (e *RetryAfterError) Error() string {
	return e.Err.Error() + "; retry after " + e.RetryAfter.String()
}

// Unwrap returns Err, so that errors.As finds the *petstore.Error and
// petstore.ErrorCode its code.
func (e *RetryAfterError) Unwrap() error { return e.Err }
