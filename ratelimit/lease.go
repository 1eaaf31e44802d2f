package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Leaser is a shared Store that hands each process a share of a subject's
// windows, so that the process decides most requests on its own, in
// memory, and asks the store once per share rather than once per request.
// adapters/redislimit implements it. A Limiter over a Leaser uses Lease
// instead of Take.
//
// Implementations must be safe for concurrent use and honour ctx.
type Leaser interface {
	Store
	// Lease does, atomically for one subject: the settlements of
	// req.Settle (returns, then debts), the ban check, the grant, and the
	// strikes of req.Refusals (plus one when req.Want > 0 and nothing was
	// granted, the asking request's own refusal), with Take's ban policy.
	// While a ban is in force nothing is granted and no strike counted.
	//
	// The grant is at most what every window has left, and at most
	// req.Need (the requests waiting for it, which use it at once), except
	// in a window less than half used, where it may be up to req.Want
	// within a quarter of what is left: spares for the requests to come
	// are lent only while far from the quota, and near it shares are just
	// what is waiting, down to single requests. Every unit granted counts
	// at once as one admitted request in every window: over all processes
	// the store never grants more than the quota.
	Lease(ctx context.Context, req LeaseRequest) (LeaseResult, error)
	// BanEvents returns the bans started and lifted at or after since,
	// oldest first, so that every process learns of a ban within its poll
	// interval. Events older than the longest ban may be forgotten. Like
	// Lease's, its times (since, and the events' At and Until) are in the
	// terms of now, the caller's clock: a store that measures on a clock
	// of its own translates them, as it does Lease's.
	BanEvents(ctx context.Context, since, now time.Time) ([]BanEvent, error)
}

// Prober is a Leaser that can check it accepts writes. A store that
// answers reads but refuses writes (Redis out of memory under
// noeviction, a read-only replica) fails every Lease yet answers
// BanEvents; a Limiter over a Prober ends an outage from its ban poll
// only once Probe succeeds, rather than each time the poll's read does.
//
// Probe must write (and may leave something that expires at once), honour
// ctx and be safe for concurrent use.
type Prober interface {
	Leaser
	// Probe writes to the store, and fails as a Lease's writes would.
	Probe(ctx context.Context, now time.Time) error
}

// LeaseRequest is one call of a process to a Leaser.
type LeaseRequest struct {
	// Subject, Rates, Now and Ban are as in Request.
	Subject string
	Rates   []Rate
	Now     time.Time
	Ban     BanPolicy
	// Want is how many requests the process asks to admit on its own; 0
	// asks for none (the call only settles and reports refusals). Need,
	// at most Want, is how many of them are waiting now.
	Want int64
	Need int64
	// Refusals counts quota refusals the process decided on its own since
	// its last call: strikes, the first at FirstRefusal and the others
	// taken to be at LastRefusal (they came between the two), so that a
	// burst told to the store later still falls within the grace.
	Refusals     int64
	FirstRefusal time.Time
	LastRefusal  time.Time
	// Settle holds, per rate, what the process gives back or owes; nil
	// when nothing.
	Settle []Settlement
	// Anonymous says the subject is a client address rather than a key:
	// a store may forget it to hold a documented cap, but never while it
	// is banned, striking or has a full window.
	Anonymous bool
}

// Settlement is what one window of a LeaseRequest gives back or owes.
type Settlement struct {
	// Returned units were granted in the window that ends at End and not
	// used; they come off the count if that window still runs.
	Returned int64
	End      time.Time
	// Debt counts requests the process admitted on its own while the store
	// failed: they are added to the running window or, when none runs, to
	// a new one that ends at End (the end the process gave its clients),
	// or that starts at Now if End is not within the window's length after
	// Now.
	Debt int64
}

// LeaseResult is a Leaser's answer.
type LeaseResult struct {
	// Granted is how many requests the process may now admit on its own.
	Granted int64
	// Refused is the first window with nothing left when nothing was
	// granted to a request that wanted some, else -1.
	Refused int
	// Banned, BanEnd and BanStarted are as in Result: a ban in force, or
	// one this call's strikes started (then nothing is granted).
	Banned     bool
	BanEnd     time.Time
	BanStarted bool
	// Windows holds every window after the call; Used counts every unit
	// granted, to any process.
	Windows []WindowCount
}

// BanEvent is a ban started (Until set) or lifted (Until zero) at At.
type BanEvent struct {
	Subject string    // whose ban it is, as in Request
	Until   time.Time // the ban's end; zero for a lift
	At      time.Time // when the ban started or was lifted
}

// leaseTarget is how long a share should last at a subject's recent
// rate: four calls a second per busy subject and process at most.
const leaseTarget = 250 * time.Millisecond

// maxWant caps one share, whatever the rate.
const maxWant = 1 << 20

// leaseTable holds a Limiter's shares, one lease per subject, in 64
// shards. It holds at most max subjects: when a shard is full, a lease
// that holds nothing (no share, no debt, no ban, no call in flight) is
// forgotten; the store still has everything it stood for.
type leaseTable struct {
	shards    [memShards]leaseShard
	seed      maphash.Seed
	max       int // per shard
	count     atomic.Int64
	evictions atomic.Uint64
}

type leaseShard struct {
	mu sync.Mutex
	m  map[string]*lease
}

func newLeaseTable(maxSubjects int) *leaseTable {
	t := &leaseTable{seed: maphash.MakeSeed(), max: max(1, maxSubjects/memShards)}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*lease)
	}
	return t
}

func (t *leaseTable) get(subject string, p int64) *lease {
	sh := &t.shards[maphash.String(t.seed, subject)%memShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[subject]; e != nil {
		return e
	}
	if len(sh.m) >= t.max {
		tries := 0
		for k, old := range sh.m {
			if old.evict(p) {
				delete(sh.m, k)
				t.count.Add(-1)
				t.evictions.Add(1)
				break
			}
			// Nothing idle among the first few: hold one more than the
			// cap rather than forget a share, a debt or a ban.
			if tries++; tries == 8 {
				break
			}
		}
	}
	e := &lease{subject: subject}
	sh.m[subject] = e
	t.count.Add(1)
	return e
}

// lock returns subject's lease, locked, and never one that was evicted
// between its lookup and its lock: whatever a caller then puts in it (a
// share, a ban) stays where settle, Close and the next request find it.
func (t *leaseTable) lock(subject string, p int64) *lease {
	for {
		e := t.get(subject, p)
		e.mu.Lock()
		if !e.evicted {
			return e
		}
		e.mu.Unlock()
	}
}

// each calls f for every lease, shard by shard.
func (t *leaseTable) each(f func(*lease)) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		ls := make([]*lease, 0, len(sh.m))
		for _, e := range sh.m {
			ls = append(ls, e)
		}
		sh.mu.Unlock()
		for _, e := range ls {
			f(e)
		}
	}
}

// lease is what a process knows of one subject: times are process times
// (Limiter.clock), in nanoseconds; 0 means "not running".
type lease struct {
	subject string
	rates   []Rate // the rates of the last decision, for Close

	mu           sync.Mutex
	evicted      bool // no longer in the table: lock looks again
	wins         []leaseWindow
	grant        int64 // units granted and not yet used, valid in every running window
	lastGrant    int64
	leasedAt     int64
	call         *leaseCall // the call in flight, nil when none
	waiting      int64      // requests waiting for the call in flight
	refusals     int64      // refusals not yet told to the store
	firstRefusal time.Time
	lastRefusal  time.Time
	banEnd       int64
	usedAt       int64 // when a request last took from the share
}

type leaseWindow struct {
	used     int64 // the store's count at the last call, plus the units of failed calls
	end      int64
	storeEnd time.Time // the window's end by the store's clock: for returns and a debt's window
	debt     int64     // admitted here while the store failed, not yet told
	returned int64     // granted and unused, to give back
}

type leaseCall struct {
	done chan struct{}
	err  error
}

// evict marks e evicted and reports true when nothing would be lost by
// forgetting it. It runs under the shard's lock, so it only tries e's.
func (e *lease) evict(p int64) bool {
	if !e.mu.TryLock() {
		return false
	}
	defer e.mu.Unlock()
	if e.grant > 0 || e.call != nil || e.waiting > 0 || e.refusals > 0 || e.banEnd > p {
		return false
	}
	for _, w := range e.wins {
		if w.debt > 0 || w.returned > 0 {
			return false
		}
	}
	// A full window is known to the store too, but this process needs it
	// while the store is unreachable.
	e.evicted = len(e.rates) != len(e.wins) || e.full(e.rates, p) < 0
	return e.evicted
}

// refresh ends what has ended by p. A share is valid only in the windows
// it was granted in: when one of them ends, what is left of it is given
// back to the others. e.mu is held.
func (e *lease) refresh(p int64, n int) {
	if len(e.wins) != n {
		e.wins = make([]leaseWindow, n)
		e.grant = 0
	}
	for i := range e.wins {
		w := &e.wins[i]
		if w.end == 0 || w.end > p {
			continue
		}
		if e.grant > 0 {
			for j := range e.wins {
				if o := &e.wins[j]; j != i && o.end > p {
					o.returned += e.grant
				}
			}
			e.grant = 0
		}
		*w = leaseWindow{}
	}
	if e.banEnd <= p {
		e.banEnd = 0
	}
}

// fit gives back the share when rates leave it no room: a share is
// granted under the quotas of the request that leased it, and a plan
// downgrade applies from the next request, so a window whose admitted
// requests already reach its new quota admits nothing more from it.
// e.mu is held.
func (e *lease) fit(rates []Rate, p int64) {
	if e.grant == 0 {
		return
	}
	for i, r := range rates {
		if w := e.wins[i]; w.used-e.grant-w.returned+w.debt < r.Quota {
			continue
		}
		for j := range e.wins {
			if e.wins[j].end > p {
				e.wins[j].returned += e.grant
			}
		}
		e.grant = 0
		return
	}
}

// request builds the call that tells the store what e has to tell it:
// refusals (taken, and put back if the call fails), debts and returns
// (kept, so that decisions made while the call is in flight count them,
// and taken off when it succeeds: settled). e.mu is held.
func (e *lease) request(subject string, rates []Rate, now time.Time, ban BanPolicy, want int64) LeaseRequest {
	req := LeaseRequest{Subject: subject, Rates: rates, Now: now, Ban: ban, Want: want,
		Refusals: e.refusals, FirstRefusal: e.firstRefusal, LastRefusal: e.lastRefusal, Anonymous: anonymous(subject)}
	e.refusals, e.firstRefusal, e.lastRefusal = 0, time.Time{}, time.Time{}
	for i := range e.wins {
		w := &e.wins[i]
		if w.debt == 0 && w.returned == 0 {
			continue
		}
		if req.Settle == nil {
			req.Settle = make([]Settlement, len(e.wins))
		}
		req.Settle[i] = Settlement{Returned: w.returned, End: w.storeEnd, Debt: w.debt}
	}
	return req
}

// settled takes off what the store has just been told by req.
func (e *lease) settled(req LeaseRequest) {
	for i := range min(len(e.wins), len(req.Settle)) {
		w := &e.wins[i]
		w.debt = max(0, w.debt-req.Settle[i].Debt)
		w.returned = max(0, w.returned-req.Settle[i].Returned)
	}
}

// failedCall puts back what req took from e: its refusals, to be told
// with the next call. The units req wanted are not counted as used: the
// store may have granted them before the answer was lost (a paused link
// delivers the call later), but a grant whose answer never arrived admits
// no request anywhere, so it cannot take any process past its quota; it
// only makes the store's count higher than what was admitted. Counting
// it here refused requests the quota allows: during a long pause every
// probe of the breaker, one a second, spent a unit of the key it was made
// for.
//
// After a timeout the returns and refusals req told are taken as told:
// the store may have run the call, and a return told twice would come off
// its count twice, letting the window over its quota, as refusals told
// twice would be strikes twice, banning a client early. A return it did
// not run stays held until its window ends instead, which only refuses;
// refusals it did not run are lost, which only bans later. Debts are
// kept, to be told again: one told twice only refuses too.
func (e *lease) failedCall(req LeaseRequest, err error) {
	if isTimeout(err) {
		for i := range min(len(e.wins), len(req.Settle)) {
			w := &e.wins[i]
			w.returned = max(0, w.returned-req.Settle[i].Returned)
		}
		return
	}
	e.refusals += req.Refusals
	if e.firstRefusal.IsZero() || (!req.FirstRefusal.IsZero() && req.FirstRefusal.Before(e.firstRefusal)) {
		e.firstRefusal = req.FirstRefusal
	}
	if req.LastRefusal.After(e.lastRefusal) {
		e.lastRefusal = req.LastRefusal
	}
}

// applied records the store's answer to req, read at wall and p.
func (e *lease) applied(req LeaseRequest, res LeaseResult, wall time.Time, p int64, maxBan time.Duration) {
	e.settled(req)
	for i := range e.wins {
		w := &e.wins[i]
		sc := res.Windows[i]
		w.used = sc.Used
		w.storeEnd = sc.Reset
		w.end = p + int64(clampDur(sc.Reset.Sub(wall), req.Rates[i].Period))
	}
	if res.Granted > 0 {
		e.grant += res.Granted
		e.lastGrant = res.Granted
		e.leasedAt = p
	}
	if res.Banned {
		e.banEnd = max(e.banEnd, p+int64(clampDur(res.BanEnd.Sub(wall), maxBan)))
	}
}

// refused counts a refusal decided in memory at wall, which the next
// call tells the store as a strike (none while bans are off). e.mu is held.
func (e *lease) refused(wall time.Time, ban BanPolicy) {
	if ban.Disabled {
		return
	}
	if e.refusals == 0 {
		e.firstRefusal = wall
	}
	e.lastRefusal = wall
	e.refusals++
}

// full returns the first window with nothing left under rates, by what
// the store last said, or -1. The share this process holds is left, as
// counts says: a unit refunded into it is admitted. It is read against the
// rates of each request, so a plan upgrade is asked of the store at once.
func (e *lease) full(rates []Rate, p int64) int {
	for i, r := range rates {
		if w := e.wins[i]; w.end > p && w.used-e.grant+w.debt-w.returned >= r.Quota {
			return i
		}
	}
	return -1
}

// nextWant is the share to ask for: what the subject used in the last
// leaseTarget at the rate of its last share, at most twice that share
// plus one, so a new subject starts with a single request and a busy one
// grows to a quarter second's worth.
func (e *lease) nextWant(p int64) int64 {
	if e.lastGrant == 0 || e.leasedAt == 0 {
		return 1
	}
	el := max(p-e.leasedAt, 1)
	w := e.lastGrant * int64(leaseTarget) / el
	return min(max(w, 1), 2*e.lastGrant+1, maxWant)
}

// counts returns the windows as this process estimates them: what the
// store said, less this process's unused share, plus its debts.
func (e *lease) counts(rates []Rate, p int64, out []WindowCount) {
	for i, r := range rates {
		w := e.wins[i]
		end := w.end
		if end == 0 {
			end = p + int64(r.Period)
		}
		out[i] = WindowCount{Used: max(0, w.used-e.grant-w.returned+w.debt), Reset: time.Unix(0, end)}
	}
}

func clampDur(d, most time.Duration) time.Duration {
	return min(max(d, 0), most)
}

// anonymous reports whether subject names a client address.
func anonymous(subject string) bool {
	return strings.HasPrefix(subject, "ip:") || strings.HasPrefix(subject, "pub:")
}

// decideLeased decides a request from the process's share of subject's
// windows, leasing a new share from the store when it has none. While a
// window is known to be full, one request at a time still asks the store
// for itself (and tells it the refusals counted meanwhile), so a spare
// another process gave back is admitted; the others are refused in memory.
func (l *Limiter) decideLeased(ctx context.Context, subject string, rates []Rate) (Decision, error) {
	wall, p := l.clock()
	var counts [2]WindowCount
	for {
		e := l.leases.lock(subject, p)
		e.refresh(p, len(rates))
		e.fit(rates, p)
		e.rates = rates
		switch {
		case e.banEnd > p:
			end := e.banEnd
			e.mu.Unlock()
			return l.leaseDecision(rates, wall, p, false, -1, end, false, e, counts[:], false), nil
		case e.grant > 0:
			e.grant--
			e.usedAt = p
			d := l.leaseDecision(rates, wall, p, true, -1, 0, false, e, counts[:], true)
			e.mu.Unlock()
			return d, nil
		case e.full(rates, p) >= 0 && e.call != nil:
			// Refused in memory, without waiting: the call in flight
			// asks the store for its own request only, and the next
			// one tells it of this refusal.
			e.refused(wall, l.ban)
			d := l.leaseDecision(rates, wall, p, false, e.full(rates, p), 0, false, e, counts[:], true)
			e.mu.Unlock()
			return d, nil
		case e.call != nil:
			c := e.call
			e.waiting++
			e.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				e.mu.Lock()
				e.waiting--
				e.mu.Unlock()
				return Decision{}, ctx.Err()
			}
			e.mu.Lock()
			e.waiting--
			e.mu.Unlock()
			wall, p = l.clock()
			if c.err != nil {
				return l.fallbackLeased(l.leases.lock(subject, p), rates, wall, p, c.err, counts[:], false)
			}
			continue
		}
		call, probe := l.callable(p)
		if !call {
			return l.fallbackLeased(e, rates, wall, p, errDown, counts[:], false)
		}
		c := &leaseCall{done: make(chan struct{})}
		e.call = c
		need := e.waiting + 1
		var req LeaseRequest
		if probe {
			// The breaker's probe changes nothing in the store: it asks
			// for no share and tells no debt, return or refusal (over a
			// Prober it is Probe, which proves writes work). A store
			// that is slow rather than down still runs a call whose answer
			// comes too late, and would count what such a call asked for
			// or told though this process never hears of it: a share no
			// request can use, a debt told again by the next call. Once
			// the probe succeeds the request asks again, with all of it.
			req = LeaseRequest{Subject: subject, Rates: rates, Now: wall, Ban: l.ban, Anonymous: anonymous(subject)}
		} else {
			req = e.request(subject, rates, wall, l.ban, max(need, e.nextWant(p)))
			req.Need = need
		}
		e.mu.Unlock()

		var res LeaseResult
		var err error
		if pr, ok := l.leaser.(Prober); ok && probe {
			// A store that answers reads but refuses writes is still down.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
			err = pr.Probe(cctx, wall)
			cancel()
		} else {
			res, err = l.lease(ctx, req)
			if err == nil && len(res.Windows) != len(rates) {
				err = fmt.Errorf("ratelimit: store returned %d windows for %d rates", len(res.Windows), len(rates))
			}
		}
		wall, p = l.clock()
		e.mu.Lock()
		e.call, c.err = nil, err
		close(c.done)
		if err != nil {
			e.failedCall(req, err)
			l.failed(p, err, probe)
			// A call that timed out may have run: the store then counted
			// this request's refusal as a strike already.
			return l.fallbackLeased(e, rates, wall, p, err, counts[:], !probe && isTimeout(err))
		}
		l.succeeded(p)
		if probe {
			// The store answers again: ask for this request's share.
			e.mu.Unlock()
			wall, p = l.clock()
			continue
		}
		e.applied(req, res, wall, p, l.ban.Max)
		if res.Granted == 0 {
			// This request's own refusal: the store counted its strike.
			d := l.leaseDecision(rates, wall, p, false, res.Refused, e.banEnd, res.BanStarted, e, counts[:], true)
			e.mu.Unlock()
			return d, nil
		}
		e.grant--
		e.usedAt = p
		d := l.leaseDecision(rates, wall, p, true, -1, 0, false, e, counts[:], true)
		e.mu.Unlock()
		return d, nil
	}
}

// fallbackLeased decides locally after the store failed with err: from
// the unused share first, then, marked Degraded, up to each window's quota
// over what the store last said plus what this process admitted on its
// own since. Those admissions are owed to the store and told to it with
// the next call, as are its refusals, unless told says the store may have
// counted this request's refusal already. e.mu is held; it is released.
func (l *Limiter) fallbackLeased(e *lease, rates []Rate, wall time.Time, p int64, err error, counts []WindowCount, told bool) (Decision, error) {
	defer e.mu.Unlock()
	e.refresh(p, len(rates))
	e.fit(rates, p)
	switch {
	case e.banEnd > p:
		return l.leaseDecision(rates, wall, p, false, -1, e.banEnd, false, e, counts, false), nil
	case e.grant > 0:
		e.grant--
		e.usedAt = p
		return l.leaseDecision(rates, wall, p, true, -1, 0, false, e, counts, true), nil
	case e.full(rates, p) >= 0:
		if !told {
			e.refused(wall, l.ban)
		}
		return l.leaseDecision(rates, wall, p, false, e.full(rates, p), 0, false, e, counts, true), nil
	}
	if !l.failOpen && l.hard.Load() {
		return Decision{}, unavailable()
	}
	l.fallbacks.Add(1)
	for i, r := range rates {
		w := &e.wins[i]
		if w.end == 0 {
			w.end = p + int64(r.Period)
			w.storeEnd = wall.Add(r.Period)
		}
		w.debt++
	}
	d := l.leaseDecision(rates, wall, p, true, -1, 0, false, e, counts, true)
	d.Degraded = true
	return d, nil
}

// leaseDecision makes the Decision of a request from e's estimate. e.mu
// is held when withCounts; a banned decision needs no counts.
func (l *Limiter) leaseDecision(rates []Rate, wall time.Time, p int64, allowed bool, refused int, banEnd int64, banStarted bool, e *lease, counts []WindowCount, withCounts bool) Decision {
	counts = counts[:len(rates)]
	if withCounts {
		e.counts(rates, p, counts)
	} else {
		for i, r := range rates {
			counts[i] = WindowCount{Reset: time.Unix(0, p+int64(r.Period))}
		}
	}
	var end time.Time
	if banEnd > 0 {
		end = time.Unix(0, banEnd)
	}
	d := decideWindows(rates, time.Unix(0, p), allowed, refused, banEnd > 0, end, banStarted, counts)
	return toWall(d, wall, p)
}

// lease calls the Leaser within the timeout, turning a panic into an
// error. The call is detached from the caller's cancellation: other
// requests wait on its answer, and a share granted must not be lost
// because one client went away.
func (l *Limiter) lease(ctx context.Context, req LeaseRequest) (res LeaseResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ratelimit: store panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	res, err = l.leaser.Lease(ctx, req)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return res, err
}

// watchBans polls the store's ban events every interval until ctx ends,
// and applies them: a ban started by any process is known here within
// the interval, and stays known while the store is unreachable. Every
// eighth interval it gives back the shares left idle (settleIdle).
func (l *Limiter) watchBans(ctx context.Context, every time.Duration) {
	defer close(l.watchDone)
	var since time.Time            // the latest event applied
	seen := map[string]time.Time{} // the events of the last banSkew applied, by id
	t := time.NewTicker(every)
	defer t.Stop()
	for tick := 1; ; tick++ {
		if tick%8 == 0 {
			l.settleIdle(ctx)
		}
		// Each event carries the clock of the process that logged it: one
		// a little behind the others logs events older than the latest
		// seen here, so the poll reaches banSkew further back and skips
		// what it already applied.
		from := since
		if !from.IsZero() {
			from = from.Add(-banSkew)
		}
		wall, _ := l.clock()
		cctx, cancel := context.WithTimeout(ctx, l.timeout)
		evs, err := l.leaser.BanEvents(cctx, from, wall)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			// A poll that fails says what a failed request says: the
			// store's health is known without traffic too.
			_, p := l.clock()
			l.failed(p, err, false)
		case err == nil:
			l.reached(ctx)
			for _, ev := range evs {
				id := ev.Subject + "|" + ev.Until.String() + "|" + ev.At.String()
				if _, ok := seen[id]; ok {
					continue
				}
				seen[id] = ev.At
				if ev.At.After(since) {
					since = ev.At
				}
				l.applyBan(ev)
			}
			for id, at := range seen {
				if at.Before(since.Add(-banSkew)) {
					delete(seen, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reached ends an outage once a ban poll has reached the store, as a
// request's successful call does: a server that fails closed is then out
// of its load balancer's rotation (its readiness check fails), and no
// request would come to probe the store. While the breaker is open the
// poll is its probe, one per cool-down. A store that reads but may refuse
// writes (Prober) must also accept a write first: else every poll would
// end an outage the next request starts again. Outside an outage a poll
// changes nothing: the breaker counts the time since the last call that
// could have spent quota, not since the last read.
func (l *Limiter) reached(ctx context.Context) {
	if !l.degraded.Load() {
		return
	}
	wall, p := l.clock()
	probe := false
	if l.open.Load() {
		var call bool
		if call, probe = l.callable(p); !call {
			return
		}
	}
	if pr, ok := l.leaser.(Prober); ok {
		cctx, cancel := context.WithTimeout(ctx, l.timeout)
		err := pr.Probe(cctx, wall)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				if probe {
					l.probing.Store(false)
				}
				return // stopping: that says nothing about the store
			}
			_, p = l.clock()
			l.failed(p, err, probe)
			return
		}
		_, p = l.clock()
	}
	l.succeeded(p)
	if probe {
		l.probing.Store(false)
	}
}

// banSkew is how far apart the clocks of processes sharing a store may
// be for a ban logged by one to reach the others through the log (their
// next call to the store for the subject learns of it in any case).
const banSkew = 5 * time.Second

// applyBan records a ban event in the subject's lease.
func (l *Limiter) applyBan(ev BanEvent) {
	wall, p := l.clock()
	e := l.leases.lock(ev.Subject, p)
	defer e.mu.Unlock()
	if ev.Until.IsZero() {
		e.banEnd = 0
		return
	}
	// A ban lasts its length at most (Until - At, both from the clock of
	// the process that started it), whatever that clock said.
	if end := p + int64(clampDur(ev.Until.Sub(wall), min(ev.Until.Sub(ev.At), l.ban.Max))); end > e.banEnd && ev.Until.After(wall) {
		e.banEnd = end
	}
}

// Close stops the limiter's background work and gives back to the shared
// store every share this process holds unused, with what it owes, so that
// a stopped process keeps no quota hostage. It returns ctx's error if ctx
// ends first. A limiter over a store that does not lease has nothing to
// give back.
func (l *Limiter) Close(ctx context.Context) error {
	if l.leaser == nil {
		return nil
	}
	l.closeOnce.Do(func() {
		l.stopWatch()
		<-l.watchDone
	})
	var firstErr error
	l.leases.each(func(e *lease) {
		if ctx.Err() != nil {
			return
		}
		if err := l.settle(ctx, e, 0); err != nil && firstErr == nil {
			firstErr = err
		}
	})
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// idleShare is how long a share may lie unused before the process gives
// it back: another process may need it before the window ends.
const idleShare = time.Second

// settle gives back e's share if it has not been used for idle, with
// what e owes and the strikes it holds, in one call; nothing when there
// is nothing to tell or a call is in flight.
func (l *Limiter) settle(ctx context.Context, e *lease, idle time.Duration) error {
	wall, p := l.clock()
	e.mu.Lock()
	if e.call != nil || len(e.rates) != len(e.wins) {
		e.mu.Unlock()
		return nil
	}
	e.refresh(p, len(e.wins))
	if e.grant > 0 && p-e.usedAt >= int64(idle) {
		for i := range e.wins {
			if e.wins[i].end > p {
				e.wins[i].returned += e.grant
			}
		}
		e.grant = 0
	}
	req := e.request(e.subject, e.rates, wall, l.ban, 0)
	if req.Settle == nil && req.Refusals == 0 {
		e.mu.Unlock()
		return nil
	}
	c := &leaseCall{done: make(chan struct{})}
	e.call = c
	e.mu.Unlock()
	res, err := l.lease(ctx, req)
	_, p = l.clock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.call, c.err = nil, err
	close(c.done)
	if err != nil || len(res.Windows) != len(req.Rates) {
		e.failedCall(req, err)
		return err
	}
	e.applied(req, res, wall, p, l.ban.Max)
	return nil
}

// settleIdle gives back, every few seconds, the shares no request has
// used for idleShare, and tells the store what is owed: the work of the
// ban poller's loop.
func (l *Limiter) settleIdle(ctx context.Context) {
	if l.degraded.Load() {
		return // each call would wait for the timeout; the outage's end will tell
	}
	l.leases.each(func(e *lease) {
		if ctx.Err() == nil && e.holds() {
			_ = l.settle(ctx, e, idleShare)
		}
	})
}

// holds reports whether e has a share, a debt, a return or strikes to
// tell the store.
func (e *lease) holds() bool {
	if !e.mu.TryLock() {
		return false // busy: it is in use, so not idle
	}
	defer e.mu.Unlock()
	if e.grant > 0 || e.refusals > 0 {
		return true
	}
	for _, w := range e.wins {
		if w.debt > 0 || w.returned > 0 {
			return true
		}
	}
	return false
}

// peek returns subject's lease, or nil when there is none.
func (t *leaseTable) peek(subject string) *lease {
	sh := &t.shards[maphash.String(t.seed, subject)%memShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[subject]
}
