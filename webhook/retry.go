package webhook

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The retry schedule: after the n-th failed attempt the next one waits
// firstRetry·2^(n-1), at most maxRetryDelay, with ±25% jitter so that the
// deliveries of one outage do not all come back at the same second; a
// delivery is given up once its next attempt would fall after
// Config.RetryFor (24 h by default) since the event was enqueued, on the
// store's clock (Due.Age). A receiver that answers 429 or 503 with
// Retry-After is not tried again before the time it asks for, at most
// maxRetryDelay away.
const (
	firstRetry    = 30 * time.Second
	maxRetryDelay = time.Hour
)

// retryDelay is the wait after the n-th failed attempt (n ≥ 1), before
// jitter.
func retryDelay(n int) time.Duration {
	d := firstRetry
	for i := 1; i < n && d < maxRetryDelay; i++ {
		d *= 2
	}
	return min(d, maxRetryDelay)
}

// nextAttempt returns when to try again after the n-th failed attempt,
// made at now, of an event enqueued at enqueued (on the clock of now);
// ok is false when that would be later than retryFor after enqueued,
// and the delivery has failed. jitter in [0, 1) picks the point in ±25%
// of the delay; wait (the receiver's Retry-After, 0 for none) is the
// least delay, capped at maxRetryDelay.
func nextAttempt(enqueued, now time.Time, n int, jitter float64, retryFor, wait time.Duration) (next time.Time, ok bool) {
	d := retryDelay(n)
	d = d*3/4 + time.Duration(float64(d/2)*jitter)
	d = max(d, min(wait, maxRetryDelay))
	next = now.Add(d)
	if next.After(enqueued.Add(retryFor)) {
		return time.Time{}, false
	}
	return next, true
}

// retryAfter is how long a receiver that answered status at now asks to
// be left alone: its Retry-After, in seconds or as an HTTP date, on a 429
// or 503, the statuses that carry it for this; 0 for none, or for one it
// cannot read.
func retryAfter(status int, h http.Header, now time.Time) time.Duration {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
