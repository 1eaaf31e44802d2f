package customdomain

import "errors"

// ErrLookupFailed marks a DNS lookup that could not be completed (timeout,
// SERVFAIL, refused): the answer is unknown, not negative.
var ErrLookupFailed = errors.New("dns lookup failed")
