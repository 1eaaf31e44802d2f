package webhook

import "time"

// The retry schedule: after the n-th failed attempt the next one waits
// firstRetry·2^(n-1), at most maxRetryDelay, with ±25% jitter so that the
// deliveries of one outage do not all come back at the same second; a
// delivery is given up once its next attempt would fall after
// Config.RetryFor (24 h by default) since the event.
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
// made at now, of an event created at created; ok is false when that
// would be later than retryFor after created, and the delivery has
// failed. jitter in [0, 1) picks the point in ±25% of the delay.
func nextAttempt(created, now time.Time, n int, jitter float64, retryFor time.Duration) (next time.Time, ok bool) {
	d := retryDelay(n)
	d = d*3/4 + time.Duration(float64(d/2)*jitter)
	next = now.Add(d)
	if next.After(created.Add(retryFor)) {
		return time.Time{}, false
	}
	return next, true
}
