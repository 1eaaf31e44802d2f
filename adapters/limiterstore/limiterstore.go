// Package limiterstore is a ratelimit.Store over any ulule/limiter/v3
// limiter.Store: its memory store for one process, its Redis store for
// many. It exists for deployments that already run ulule's stores; the
// ratelimit package's own MemoryStore and the redislimit adapter are
// faster (one step, one round trip) and take the clock from the limiter.
//
// # What it is, and is not
//
// ulule/limiter decides one rate per key; the ratelimit package decides two
// fixed windows, strikes and doubling bans in one step. This adapter does
// not use ulule as a rate limiter: it uses ulule's stores as counters with
// an expiry, and builds the step from them. Two of its uses are outside
// what ulule documents: a ban's end is stored as a counter's value, and a
// refused request's increments are taken back with negative increments.
// Both hold for ulule v3's memory and Redis stores (the ratelimittest suite
// checks them, on Redis too), but a future ulule store or version could
// break them. Choose it only to keep one ulule deployment; a new one should
// use ratelimit.MemoryStore or adapters/redislimit.
//
// # How the step maps onto ulule's keys
//
// ulule counts one key at one rate per call, so a step is several calls,
// ordered so that the limiter stays exact under concurrency:
//
//   - "b:<subject>" holds a ban: its count is the ban's end in Unix
//     milliseconds, its expiry the ban's length. It is read first (Peek);
//     a ban in force writes nothing, so it cannot extend itself.
//   - "w:<period ms>:<subject>" is a window. Windows are incremented
//     shortest first (Get); when one is over its quota, it and every window
//     incremented before it are refunded (Increment by -1) and the request
//     is refused. So only admitted requests keep their counts, a minute
//     refusal costs no day quota, and, because a request is admitted only
//     when its own increment fits, concurrent requests never over-admit.
//     ulule starts a window's expiry at the first increment after the last
//     one expired: a fixed window from the subject's first request, as the
//     ratelimit package wants.
//   - "g:<subject>" holds the start of the strike window (Request.Now in
//     Unix milliseconds, expiring after the policy's Within): the first
//     refusal writes it (and is a strike), and the refusals within the
//     policy's Grace after it are no strikes.
//   - "s:<subject>" counts strikes in a fixed window of the policy's Within,
//     from the first strike. The strike that exceeds the policy (exactly
//     one request sees that count) starts the ban and resets the strikes.
//   - "l:<subject>" is the ban level, for doubling: its count is the level,
//     its expiry the ban's length plus the policy's Memory.
//
// # Where the injected clock cannot reach
//
// ulule reads the wall clock itself (time.Now, and Redis's own clock for
// expiries), so Request.Now only dates the ban's end; windows and strikes
// run on the wall clock. Use this store with a Limiter on the wall clock
// (Config.Clock nil). Tests can travel in time with the memory store inside
// a testing/synctest bubble (its clean-up goroutine disabled), but not with
// the Redis store, whose expiries follow the server's clock: there the
// suite's time-travel tests are skipped.
//
// # After an outage
//
// The store is a ratelimit.Debtor: what a Limiter admitted on its own while
// the ulule store failed is added to the windows (Owe, one Increment each)
// before the Limiter's next call is decided, so a window counts every
// request admitted in it, whichever process admitted it, and the processes
// together admit at most the quota per process over an outage and the rest
// of its window.
//
// ulule reports a window's reset in whole seconds, rounded down; this store
// rounds it up, so a Reset or Retry-After may be up to a second late, never
// early. A refund that lands after its window expired is undone at once,
// since ulule would start the next window at -1.
//
// # Refunds
//
// The store is a ratelimit.Refunder, with one gap that ulule's API leaves:
// a window's end is known only to the second, so a window that ends within
// a second of the refunded request's instant plus its period cannot be told
// from one that began after that instant, and gets nothing back. So a
// request admitted in the first second of its window (its first request,
// or a burst at its start) spends its quota in that window even when
// refunded; a later one is given back, as by the other stores. The gap
// refuses requests, it never admits one over the quota. A refund is a Peek
// then an Increment, not one step, and ulule has no Increment bound to one
// window: one that lands in the next window would give it a unit until it
// is undone. So a window that may end within a second after the Peek's
// answer gets nothing back either (a refund in a window's last second or
// two is lost), and only an Increment that reaches the store more than a
// second after the Peek's answer (a link paused or that slow) can still
// land in the next window, which may then admit one more request while
// the undo is on its way.
package limiterstore

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/petstorekit/petstore/ratelimit"
)

// Store is a ratelimit.Store over a ulule limiter.Store. It is safe for
// concurrent use when the ulule store is.
type Store struct {
	st limiter.Store
}

var (
	_ ratelimit.Debtor   = (*Store)(nil)
	_ ratelimit.Refunder = (*Store)(nil)
)

// New returns a Store over st, for example memory.NewStore() or the
// ulule Redis store.
func New(st limiter.Store) *Store { return &Store{st: st} }

// big is the "limit" of keys whose count is a value (a time, a level), not
// a quota: their Remaining gives the count back as big - count.
var big = limiter.Rate{Limit: math.MaxInt64, Period: time.Hour}

// value returns the count of a value key, 0 when it is absent.
func value(c limiter.Context) int64 { return math.MaxInt64 - c.Remaining }

// Take implements ratelimit.Store: 1 + len(Rates) calls to admit (three
// round trips on Redis), more to refuse or ban.
func (s *Store) Take(ctx context.Context, req ratelimit.Request) (ratelimit.Result, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Result{}, err
	}
	now := req.Now.UnixMilli()
	res := ratelimit.Result{Refused: -1, Windows: make([]ratelimit.WindowCount, len(req.Rates))}

	b, err := s.st.Peek(ctx, "b:"+req.Subject, big)
	if err != nil {
		return res, err
	}
	if end := value(b); end > now {
		res.Banned, res.BanEnd = true, time.UnixMilli(end)
		return res, s.peekFrom(ctx, req, &res, 0)
	}

	for i, r := range req.Rates {
		c, err := s.st.Get(ctx, windowKey(r, req.Subject), limiter.Rate{Limit: r.Quota, Period: r.Period})
		if err != nil {
			return res, err
		}
		res.Windows[i] = ratelimit.WindowCount{Used: r.Quota - c.Remaining, Reset: resetOf(c)}
		if !c.Reached {
			continue
		}
		res.Refused = i
		for j := i; j >= 0; j-- {
			if err := s.refund(ctx, req.Rates[j], req.Subject); err != nil {
				return res, err
			}
			if j < i {
				res.Windows[j].Used--
			}
		}
		if err := s.peekFrom(ctx, req, &res, i+1); err != nil {
			return res, err
		}
		return res, s.strike(ctx, req, &res)
	}
	res.Allowed = true
	return res, nil
}

// Owe implements ratelimit.Debtor: one Increment per window owed. A
// window that does not run starts with the debt, and expires where the
// process that admitted it said it ends (ulule starts a key's expiry at
// its first increment), or a period after now.
func (s *Store) Owe(ctx context.Context, req ratelimit.Request, settle []ratelimit.Settlement) error {
	for i, r := range req.Rates {
		if i >= len(settle) || settle[i].Debt <= 0 {
			continue
		}
		period := r.Period
		if left := settle[i].End.Sub(req.Now); left > 0 && left <= r.Period {
			period = left
		}
		rate := limiter.Rate{Limit: r.Quota, Period: period}
		if _, err := s.st.Increment(ctx, windowKey(r, req.Subject), settle[i].Debt, rate); err != nil {
			return err
		}
	}
	return nil
}

// Refund implements ratelimit.Refunder: per window, a Peek, then an
// Increment by -1 when the window surely is the one req.Now was admitted
// in. ulule tells a window's end only to the second (Context.Reset), so a
// window that ends within a second after req.Now plus its period could as
// well have begun since; it gets nothing, and a request admitted in the
// first second of its window is not given back to that window. Nor is a
// window that may end within a second after the Peek's answer, so that the
// Increment lands in it; one that still lands in the next window gets the
// unit taken back at once (see give).
func (s *Store) Refund(ctx context.Context, req ratelimit.Request) error {
	for _, r := range req.Rates {
		sent := time.Now()
		c, err := s.st.Peek(ctx, windowKey(r, req.Subject), limiter.Rate{Limit: r.Quota, Period: r.Period})
		if err != nil {
			return err
		}
		// ulule adds the store's TTL to the answer's arrival, so the
		// window ends no sooner than its second less the round trip.
		now := time.Now()
		endsSoon := time.Unix(c.Reset, 0).Sub(now)-now.Sub(sent) < time.Second
		if c.Remaining < r.Quota && admittedIn(c, r, req.Now) && !endsSoon {
			if err := s.give(ctx, r, req.Subject, req.Now); err != nil {
				return err
			}
		}
	}
	return nil
}

// admittedIn reports whether the window c describes, which runs now, surely
// ran at the instant at: it ends no later than at plus its period, its end
// being known only to the second, rounded down.
func admittedIn(c limiter.Context, r ratelimit.Rate, at time.Time) bool {
	return !time.Unix(c.Reset+1, 0).After(at.Add(r.Period))
}

func windowKey(r ratelimit.Rate, subject string) string {
	return "w:" + strconv.FormatInt(r.Period.Milliseconds(), 10) + ":" + subject
}

// refund takes a refused request's count back from a window.
func (s *Store) refund(ctx context.Context, r ratelimit.Rate, subject string) error {
	return s.give(ctx, r, subject, time.Time{})
}

// give takes one count back from a window of subject, and undoes it when
// the window expired in between (ulule then started a new one at -1) or,
// for a non-zero at, when the window it reached is not one at was in (one
// began since).
func (s *Store) give(ctx context.Context, r ratelimit.Rate, subject string, at time.Time) error {
	rate := limiter.Rate{Limit: r.Quota, Period: r.Period}
	c, err := s.st.Increment(ctx, windowKey(r, subject), -1, rate)
	if err != nil {
		return err
	}
	if c.Remaining > r.Quota || !at.IsZero() && !admittedIn(c, r, at) {
		_, err = s.st.Increment(ctx, windowKey(r, subject), 1, rate)
	}
	return err
}

// peekFrom fills res.Windows[from:] without counting.
func (s *Store) peekFrom(ctx context.Context, req ratelimit.Request, res *ratelimit.Result, from int) error {
	for i := from; i < len(req.Rates); i++ {
		r := req.Rates[i]
		c, err := s.st.Peek(ctx, windowKey(r, req.Subject), limiter.Rate{Limit: r.Quota, Period: r.Period})
		if err != nil {
			return err
		}
		res.Windows[i] = ratelimit.WindowCount{Used: r.Quota - c.Remaining, Reset: resetOf(c)}
	}
	return nil
}

// strike records a quota refusal and, when it exceeds the policy, bans.
func (s *Store) strike(ctx context.Context, req ratelimit.Request, res *ratelimit.Result) error {
	if req.Ban.Disabled {
		return nil
	}
	p := req.Ban.WithDefaults()
	if in, err := s.inGrace(ctx, req, p); in || err != nil {
		return err
	}
	// With a limit of Strikes+1, exactly one request sees Remaining 0
	// unreached: the strike that exceeds the policy.
	c, err := s.st.Get(ctx, "s:"+req.Subject, limiter.Rate{Limit: p.Strikes + 1, Period: p.Within})
	if err != nil || c.Reached || c.Remaining != 0 {
		return err
	}
	l, err := s.st.Peek(ctx, "l:"+req.Subject, big)
	if err != nil {
		return err
	}
	level := value(l) + 1
	length := p.BanLength(level)
	end := req.Now.Add(length)
	steps := []struct {
		key   string
		count int64
		ttl   time.Duration
	}{
		{"l:" + req.Subject, level, length + p.Memory},
		{"b:" + req.Subject, end.UnixMilli(), length},
	}
	for _, st := range steps {
		rate := limiter.Rate{Limit: math.MaxInt64, Period: st.ttl}
		if _, err := s.st.Reset(ctx, st.key, rate); err != nil {
			return err
		}
		if _, err := s.st.Increment(ctx, st.key, st.count, rate); err != nil {
			return err
		}
	}
	if _, err := s.st.Reset(ctx, "s:"+req.Subject, limiter.Rate{Limit: p.Strikes + 1, Period: p.Within}); err != nil {
		return err
	}
	res.Banned, res.BanEnd = true, time.UnixMilli(end.UnixMilli())
	return nil
}

// inGrace reports whether req falls within the grace after the first
// refusal of its subject's strike window, starting the window (req is then
// its first refusal, a strike) when none is running. Two first refusals at
// once may both start it and both be strikes: at most one more than the
// other stores count.
func (s *Store) inGrace(ctx context.Context, req ratelimit.Request, p ratelimit.BanPolicy) (bool, error) {
	grace := p.GraceOrZero()
	if grace == 0 {
		return false, nil
	}
	key := "g:" + req.Subject
	g, err := s.st.Peek(ctx, key, big)
	if err != nil {
		return false, err
	}
	if start := value(g); start != 0 {
		return req.Now.UnixMilli() < start+grace.Milliseconds(), nil
	}
	rate := limiter.Rate{Limit: math.MaxInt64, Period: p.Within}
	if _, err := s.st.Reset(ctx, key, rate); err != nil {
		return false, err
	}
	_, err = s.st.Increment(ctx, key, req.Now.UnixMilli(), rate)
	return false, err
}

// resetOf turns ulule's reset, Unix seconds rounded down, into a time
// rounded up, so nobody is told to come back before the window ends.
func resetOf(c limiter.Context) time.Time { return time.Unix(c.Reset+1, 0) }
