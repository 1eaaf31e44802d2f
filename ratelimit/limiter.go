package ratelimit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	petstore "github.com/petstorekit/petstore"
)

// Config configures a Limiter. The zero value is usable: the wall clock,
// the default ban policy, fail open, a 100 ms store timeout, no logging.
type Config struct {
	// Clock returns the current time; time.Now when nil. Stores that read
	// the wall clock themselves (limiterstore) need the wall clock here.
	Clock func() time.Time
	// BanPolicy says when strikes ban a subject. Zero fields take the
	// values of DefaultBanPolicy; set Disabled to never ban.
	BanPolicy BanPolicy
	// FailClosed makes Decide return an unavailable error (503) when the
	// store fails. When false, the default the spec asks for, requests are
	// admitted uncounted and marked Degraded instead. It is the operator's
	// choice: open keeps the API up when the counter store is down, closed
	// keeps the limits.
	FailClosed bool
	// StoreTimeout bounds every store call, so a stuck store costs a
	// request at most this long; 100 ms when zero.
	StoreTimeout time.Duration
	// Logger receives store failures, at most one per LogInterval. Subjects
	// are never logged: they may name a key. Nothing is logged when nil.
	Logger *slog.Logger
	// LogInterval is the least time between two failure logs; 1 min when zero.
	LogInterval time.Duration
}

// Limiter decides whether requests may proceed under their limits. It is
// safe for concurrent use.
type Limiter struct {
	store    Store
	now      func() time.Time
	ban      BanPolicy
	failOpen bool
	timeout  time.Duration
	log      *slog.Logger
	interval time.Duration

	failures atomic.Uint64
	degraded atomic.Bool
	lastLog  atomic.Int64 // Unix nanoseconds of the last failure log
}

// New returns a Limiter that keeps its counters in store.
func New(store Store, cfg Config) *Limiter {
	l := &Limiter{
		store:    store,
		now:      cfg.Clock,
		ban:      cfg.BanPolicy,
		failOpen: !cfg.FailClosed,
		timeout:  cfg.StoreTimeout,
		log:      cfg.Logger,
		interval: cfg.LogInterval,
	}
	if l.now == nil {
		l.now = time.Now
	}
	if !l.ban.Disabled {
		l.ban = l.ban.WithDefaults()
	}
	if l.timeout <= 0 {
		l.timeout = 100 * time.Millisecond
	}
	if l.log == nil {
		l.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if l.interval <= 0 {
		l.interval = time.Minute
	}
	return l
}

// Decide decides one request of subject ("key:<id>" or "ip:<address>")
// under limits, counting it when it is admitted. limits are read on every
// call, so a plan change applies from the next request.
//
// A refusal is not an error: it is a Decision with Allowed false and Code
// rate_limited or api_key_banned. Decide returns an error only when the
// store fails and the limiter fails closed (unavailable), when the limits
// are not valid (internal), or when ctx ends before a decision.
func (l *Limiter) Decide(ctx context.Context, subject string, limits petstore.Limits) (Decision, error) {
	if !limits.Valid() {
		return Decision{}, petstore.Errorf(petstore.CodeInternal, "invalid rate limits")
	}
	now := l.now()
	req := Request{Subject: subject, Rates: Rates(limits), Now: now, Ban: l.ban}
	res, err := l.take(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up; that says nothing about the store.
			return Decision{}, ctx.Err()
		}
		l.failed(now, err)
		if l.failOpen {
			return Decision{Allowed: true, Degraded: true, At: now}, nil
		}
		return Decision{}, petstore.Errorf(petstore.CodeUnavailable, "rate limiter unavailable")
	}
	l.degraded.Store(false)
	if len(res.Windows) != len(req.Rates) {
		l.failed(now, fmt.Errorf("store returned %d windows for %d rates", len(res.Windows), len(req.Rates)))
		if l.failOpen {
			return Decision{Allowed: true, Degraded: true, At: now}, nil
		}
		return Decision{}, petstore.Errorf(petstore.CodeUnavailable, "rate limiter unavailable")
	}
	return decide(req, res), nil
}

// take calls the store within the timeout, turning a panic into an error:
// a broken store must not take the server down with it.
func (l *Limiter) take(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ratelimit: store panicked: %v", p)
		}
	}()
	if _, ok := l.store.(*MemoryStore); ok {
		// It never waits on anything but its own short critical section,
		// so a timer, a third of a decision's cost, would buy nothing.
		return l.store.Take(ctx, req)
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	res, err = l.store.Take(ctx, req)
	if err == nil && ctx.Err() != nil {
		// A store that ignored the deadline still failed to meet it.
		err = ctx.Err()
	}
	return res, err
}

func (l *Limiter) failed(now time.Time, err error) {
	l.failures.Add(1)
	l.degraded.Store(true)
	last := l.lastLog.Load()
	if last != 0 && now.UnixNano()-last < int64(l.interval) {
		return
	}
	if !l.lastLog.CompareAndSwap(last, now.UnixNano()) {
		return // another goroutine logs this one
	}
	mode := "closed"
	if l.failOpen {
		mode = "open"
	}
	l.log.Error("rate limit store failed; failing "+mode,
		"error", err, "failures", l.failures.Load())
}

// Degraded reports whether the last store call failed: while it is true,
// requests are admitted uncounted (fail open) or refused (fail closed).
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Failures returns how many store calls have failed since New, for a
// metric or a health check.
func (l *Limiter) Failures() uint64 { return l.failures.Load() }

// decide turns a store result into a Decision.
func decide(req Request, res Result) Decision {
	d := Decision{Allowed: res.Allowed, At: req.Now, Windows: make([]Window, len(req.Rates))}
	binding := 0
	for i, r := range req.Rates {
		d.Windows[i] = Window{
			Name:      r.Name,
			Quota:     r.Quota,
			Length:    r.Period,
			Remaining: max(0, r.Quota-res.Windows[i].Used),
			Reset:     res.Windows[i].Reset,
		}
		// Strictly fewer: on a tie the earlier, shorter window binds.
		if d.Windows[i].Remaining < d.Windows[binding].Remaining {
			binding = i
		}
	}
	switch {
	case res.Banned:
		// No window admits anything before the ban ends, whatever its own
		// count says, so every window reports nothing left until then: the
		// IETF header must not promise requests a 900 s Retry-After denies.
		for i := range d.Windows {
			d.Windows[i].Remaining = 0
			d.Windows[i].Reset = res.BanEnd
		}
		d.Allowed = false
		d.Code = petstore.CodeAPIKeyBanned
		d.Binding = d.Windows[binding]
		d.RetryAfter = retryAfter(req.Now, res.BanEnd)
	case !res.Allowed:
		if res.Refused >= 0 && res.Refused < len(d.Windows) {
			binding = res.Refused
		}
		d.Code = petstore.CodeRateLimited
		d.Windows[binding].Remaining = 0
		d.Binding = d.Windows[binding]
		d.RetryAfter = retryAfter(req.Now, d.Binding.Reset)
	default:
		d.Binding = d.Windows[binding]
	}
	return d
}

// retryAfter is the wait until end in whole seconds, rounded up so a client
// that honours it never comes back early, and at least one second.
func retryAfter(now, end time.Time) time.Duration {
	return time.Duration(ceilSeconds(end.Sub(now))) * time.Second
}

func ceilSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(1, s)
}
