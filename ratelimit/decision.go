package ratelimit

import "time"

// Window is the state of one fixed window after a decision: what the
// X-RateLimit-* and the IETF RateLimit headers report.
type Window struct {
	Name      string        // "minute" or "day"
	Quota     int64         // requests allowed in the window
	Length    time.Duration // the window's length: 60 s or 86 400 s
	Remaining int64         // requests left in the window, never negative
	Reset     time.Time     // when the window ends and its count starts over
}

// Decision is the verdict on one request.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Code is "" when allowed, else petstore.CodeRateLimited or
	// petstore.CodeAPIKeyBanned.
	Code string
	// Binding is the window the X-RateLimit-* headers report: the one
	// with the fewest requests remaining (the shorter on a tie), or, on a
	// refusal, the full window that ends last: the minute when only the
	// minute is spent, the day when the day is spent too, since no
	// request is admitted before then. For a ban its Remaining is 0 and
	// its Reset is the ban's end.
	Binding Window
	// Windows lists every window, shortest first, for the IETF headers.
	// While a ban lasts every window reports Remaining 0 and Reset = the
	// ban's end: no window admits a request before then.
	Windows []Window
	// RetryAfter is how long a refused client must wait: at least one
	// second, and never before the refusing window or ban really ends.
	RetryAfter time.Duration
	// Degraded is true when the shared counter store failed and the
	// limiter's local fallback took the decision. Its figures are this
	// process's estimate: what the store last said plus what this process
	// admitted since, never more than the quota remaining.
	Degraded bool
	// BanStarted is true on the one refusal whose strike started the ban
	// (Code api_key_banned): the moment to log it, once.
	BanStarted bool
	// At is the instant of the decision, from the limiter's clock: the
	// "now" against which Reset times turn into seconds (Window.ResetIn).
	At time.Time
}

// ResetUnix returns Reset as Unix seconds, rounded up so that a client
// waiting until then never comes back before the window really ends: the
// X-RateLimit-Reset header.
func (w Window) ResetUnix() int64 {
	s := w.Reset.Unix()
	if w.Reset.Nanosecond() > 0 {
		s++
	}
	return s
}

// ResetIn returns the whole seconds from now until Reset, rounded up and
// never negative: the t parameter of the IETF RateLimit header.
func (w Window) ResetIn(now time.Time) int64 {
	d := w.Reset.Sub(now)
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
