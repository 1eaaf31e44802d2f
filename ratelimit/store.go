package ratelimit

import (
	"context"
	"time"

	petstore "github.com/petstorekit/petstore"
)

// Store keeps the counters and bans of every subject. Each call to Take is
// one atomic step for one subject: the ban check, every window, and, on a
// quota refusal, the strike and the ban policy. Doing it in one step is what
// keeps the limiter exact under concurrency and across processes: peeking
// the windows and incrementing them afterwards would let concurrent requests
// through together.
//
// Implementations must honour ctx (its deadline bounds the call) and be safe
// for concurrent use. The ratelimittest package checks all of this.
type Store interface {
	// Take decides req at req.Now and records its effect:
	//   - If the subject is banned (a ban whose end is after req.Now), the
	//     request is refused with Result.Banned and BanEnd set, and nothing is
	//     written: a ban cannot extend itself.
	//   - Otherwise, if every window has room, every window counts the request
	//     and it is admitted. Only admitted requests consume quota, so a
	//     request refused by one window costs no quota in the others.
	//   - Otherwise the first window without room (in Rates order) refuses
	//     it. Unless a strike window is running, one starts at req.Now with
	//     this refusal as its first strike; otherwise, unless req.Now is
	//     within req.Ban.Grace after the strike window's start, the subject
	//     gets a strike. If the strikes exceed req.Ban.Strikes, a ban starts
	//     at req.Now (and this request reports it).
	//
	// A window is fixed: it starts at the subject's first admitted request
	// after the previous window ended, and lasts its Rate.Period.
	// Result.Windows reports every window in Rates order, after the step.
	Take(ctx context.Context, req Request) (Result, error)
}

// A Debtor is a shared Store that a Limiter tells what it admitted on its
// own while the store failed, with the first call that reaches the store
// again, so that the store counts every request admitted in a window and
// the processes together admit no more than the bound of an outage.
// Leasers are told their debts with Lease instead.
type Debtor interface {
	Store
	// Owe adds settle[i].Debt admitted requests to req.Rates[i]'s window
	// of req.Subject (settle[i].Returned is not used): to the running
	// window, or, when none runs, to a new one that ends at settle[i].End
	// (the end the process gave its clients), or that starts at req.Now
	// if End is not within the window's length after req.Now. It never
	// refuses, strikes or bans, and may take a window over its quota.
	Owe(ctx context.Context, req Request, settle []Settlement) error
}

// Rate is the allowance of one fixed window.
type Rate struct {
	Name   string        // "minute" or "day": the IETF header's policy name
	Quota  int64         // requests allowed per window, at least 1
	Period time.Duration // the window's length; stores key windows by it
}

// Request is one step asked of a Store.
type Request struct {
	// Subject names who is limited: "key:<id>" or "ip:<address>".
	Subject string
	// Rates are the windows, shortest first. A plan change shows up as new
	// quotas on the same periods, so counts carry over to the new plan.
	Rates []Rate
	// Now is the instant of the request. Stores use it instead of reading a
	// clock, so tests cross minute and day boundaries without sleeping. A
	// store shared by processes may measure on a clock of its own, so that
	// their clocks need not agree, and answer in Now's terms
	// (adapters/redislimit does, unless told CallerClock).
	Now time.Time
	// Ban is the ban policy to apply on a quota refusal.
	Ban BanPolicy
}

// WindowCount is the state of one window after a step.
type WindowCount struct {
	// Used is the number of admitted requests in the window.
	Used int64
	// Reset is when the window ends. For a window that has not started
	// (no admitted request yet), it is Now + Period: where it would end if
	// it started now.
	Reset time.Time
}

// Result is the outcome of one step.
type Result struct {
	// Allowed reports whether the request was admitted and counted.
	Allowed bool
	// Refused is the index in Request.Rates of the window that refused the
	// request, or -1 when it was admitted or refused by a ban in force.
	Refused int
	// Banned reports a refusal by a ban: one in force, or one this
	// request's strike started. BanEnd is then the ban's end.
	Banned bool
	BanEnd time.Time
	// BanStarted reports that this request's strike started the ban.
	BanStarted bool
	// Windows holds every window's state, in Request.Rates order.
	Windows []WindowCount
}

// BanPolicy says when repeated quota refusals ban a subject, and for how
// long. A quota refusal is a strike. The first one starts a strike window
// of Within; the refusals that follow it within Grace are no strikes, and
// more than Strikes strikes in the window ban the subject for Duration. A ban that starts within Memory after the previous ban ended
// lasts twice as long as that one, up to Max.
//
// Grace is what keeps a burst from banning a client that behaves: requests
// sent together, before the first answer arrived, could not have seen the
// first 429, so the whole burst is one strike, and only the requests that
// keep coming Grace after the first 429 count. A second
// is far more than a round trip on any network a client uses, and far
// less than the minute an abusive client would need to be banned.
type BanPolicy struct {
	Disabled bool          // no strikes are counted and nobody is banned
	Strikes  int64         // strikes tolerated within Within (default 30)
	Within   time.Duration // the strike window: fixed, from the first refusal (default 1 min)
	Grace    time.Duration // refusals this soon after the strike window's first are no strikes (default 1 s; negative: none)
	Duration time.Duration // the first ban's length (default 15 min)
	Memory   time.Duration // how long after a ban a new one doubles (default 24 h)
	Max      time.Duration // the longest ban (default 24 h)
}

// DefaultBanPolicy returns the spec's policy: more than 30 strikes within a
// minute ban for 15 minutes, doubling for each further ban within 24 hours,
// capped at 24 hours; refusals within a second after the first are no
// strikes.
func DefaultBanPolicy() BanPolicy {
	return BanPolicy{Strikes: 30, Within: time.Minute, Grace: time.Second, Duration: 15 * time.Minute, Memory: 24 * time.Hour, Max: 24 * time.Hour}
}

// GraceOrZero returns Grace, or 0 when it is negative (no grace): what a
// store compares with after WithDefaults.
func (p BanPolicy) GraceOrZero() time.Duration { return max(p.Grace, 0) }

// WithDefaults returns p with its zero fields taken from DefaultBanPolicy
// (and Max raised to Duration if it is shorter). Stores apply it to the
// policy of a request, so a zero policy means the default one.
func (p BanPolicy) WithDefaults() BanPolicy {
	d := DefaultBanPolicy()
	if p.Strikes <= 0 {
		p.Strikes = d.Strikes
	}
	if p.Within <= 0 {
		p.Within = d.Within
	}
	if p.Grace == 0 {
		p.Grace = d.Grace
	}
	if p.Duration <= 0 {
		p.Duration = d.Duration
	}
	if p.Memory <= 0 {
		p.Memory = d.Memory
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	if p.Max < p.Duration {
		p.Max = p.Duration
	}
	return p
}

// BanLength returns the length of a subject's level-th ban in a row (the
// first is level 1): Duration doubled level-1 times, at most Max.
func (p BanPolicy) BanLength(level int64) time.Duration {
	d := p.Duration
	for i := int64(1); i < level && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Rates returns the two windows of limits: the minute, then the day.
func Rates(limits petstore.Limits) []Rate {
	return appendRates(nil, limits)
}

// appendRates appends the windows of limits to rates.
func appendRates(rates []Rate, limits petstore.Limits) []Rate {
	return append(rates,
		Rate{Name: "minute", Quota: limits.PerMinute, Period: time.Minute},
		Rate{Name: "day", Quota: limits.PerDay, Period: 24 * time.Hour})
}
