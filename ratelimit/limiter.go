package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	petstore "github.com/petstorekit/petstore"
)

// Config configures a Limiter. The zero value is usable: the wall clock,
// the default ban policy, fail open, a 1 s store timeout, no logging.
type Config struct {
	// Clock returns the current time; time.Now when nil. Stores that read
	// a clock themselves (limiterstore; redislimit unless CallerClock)
	// need the wall clock here.
	// The circuit breaker's cool-down runs on it too. It must be safe for
	// concurrent use: requests and, over a Leaser, the ban poll read it.
	Clock func() time.Time
	// BanPolicy says when strikes ban a subject. Zero fields take the
	// values of DefaultBanPolicy; set Disabled to never ban.
	BanPolicy BanPolicy
	// FailClosed makes Decide return an unavailable error (503) while the
	// store is unreachable: its last call failed without timing out (a
	// refused or reset connection), whether or not the breaker is open
	// since. A store whose calls only time out is decided by the local
	// fallback in either mode, the breaker open or not, since a slow store
	// is not a dead one (Status.Unreachable). When false, the default the
	// spec asks for, every failure is decided by the local fallback.
	FailClosed bool
	// StoreTimeout bounds every store call, so a stuck store costs a
	// request at most this long; 1 s when zero. It is the line between a
	// busy store and a failing one, so it is far above a round trip even
	// under load (with 2 × 200 concurrent calls, 40 ms of latency and
	// every core busy, 300 ms took a working Redis for a dead one). The
	// breaker keeps it cheap: once the store is taken for down, no request
	// waits for it.
	StoreTimeout time.Duration
	// BreakerFailures is how many failures in a row, with no success for a
	// whole StoreTimeout, take the store for down: the limiter then stops
	// calling it, deciding locally at once, and sends one probe every
	// BreakerCooldown until a call succeeds. 5 when zero.
	BreakerFailures int
	// BreakerCooldown is the wait between probes while the store is taken
	// for down; 1 s when zero.
	BreakerCooldown time.Duration
	// FallbackSubjects caps the subjects a limiter over a shared store
	// keeps in memory: its shares and known bans over a Leaser, its local
	// fallback over another store (see MaxSubjects). DefaultMaxSubjects
	// when zero. Over a Leaser, only subjects that hold nothing (no share,
	// debt, strike, ban or full window) are forgotten to make room.
	FallbackSubjects int
	// Logger receives one line when the store starts failing (then at most
	// one per LogInterval while it keeps failing) and one when it
	// recovers. Subjects are never logged: they may name a key. Nothing is
	// logged when nil.
	Logger *slog.Logger
	// LogInterval is the least time between two failure logs; 1 min when zero.
	LogInterval time.Duration
	// History, when set, records every decision, for Report's last hour
	// minute by minute (a customer's usage chart).
	History *History
	// BanPoll is how often a limiter over a Leaser asks the store for
	// bans started by other processes; 250 ms when zero. A ban reaches
	// every process within it (and a round trip). Each poll counts
	// toward Status as a request's call does, so the store's health is
	// known without traffic.
	BanPoll time.Duration
}

// Limiter decides whether requests may proceed under their limits. It is
// safe for concurrent use.
//
// # Shared stores
//
// Over a Leaser (adapters/redislimit), the limiter decides from shares of
// each subject's windows that it leases from the store, one call per
// share, and learns of other processes' bans by polling the store (see
// the package documentation). Over another shared store it calls the
// store for every request and mirrors each answer in a local MemoryStore;
// what it admits on its own while that store fails it tells a Debtor
// with its next call. A store that is no Debtor never learns of those
// requests, so once it is back a window may admit its whole quota again.
//
// # When the store fails
//
// When a store call fails or times out, the request is decided here with
// the same limits, starting from the last shared figures: over-admission
// is bounded by the number of processes (each admits at most a plan's
// quota on its own), never unlimited, and a known ban or full window stays
// in force. Such decisions are marked Decision.Degraded. After
// BreakerFailures failures in a row with no success for a StoreTimeout,
// the store is taken for down and not called (so a dead store costs no
// request its timeout) except for one probe every BreakerCooldown; the
// first success ends the outage. Status reports all of it. Close gives
// back the shares this process holds.
type Limiter struct {
	store    Store
	local    *MemoryStore // the fallback of a store that does not lease; nil otherwise
	leaser   Leaser       // store, when it leases shares
	leases   *leaseTable  // the shares and bans known here, with leaser
	base     time.Time    // the clock's reading at New: process time starts there
	baseNano int64
	maxSubj  int64
	level    atomic.Int32 // anonymous addresses aggregated: 0 as given, 1 per /48 (IPv6)
	now      func() time.Time
	ban      BanPolicy
	failOpen bool
	timeout  time.Duration
	trip     int64
	cooldown time.Duration
	log      *slog.Logger
	interval time.Duration

	failures  atomic.Uint64
	fallbacks atomic.Uint64
	inRow     atomic.Int64 // failures since the last success
	lastOK    atomic.Int64 // Unix nanoseconds of the last success
	hard      atomic.Bool  // the last failure was not a timeout
	open      atomic.Bool  // the breaker: the store is taken for down
	openedAt  atomic.Int64 // Unix nanoseconds the breaker last opened or probed
	probing   atomic.Bool  // a probe is under way
	degraded  atomic.Bool
	since     atomic.Int64 // Unix nanoseconds the outage began
	lastLog   atomic.Int64 // Unix nanoseconds of the last failure log

	history *History // nil: decisions are not recorded

	stopWatch func()
	watchDone chan struct{}
	closeOnce sync.Once
}

// New returns a Limiter that keeps its counters in store.
func New(store Store, cfg Config) *Limiter {
	l := &Limiter{
		store:    store,
		now:      cfg.Clock,
		ban:      cfg.BanPolicy,
		failOpen: !cfg.FailClosed,
		timeout:  cfg.StoreTimeout,
		trip:     int64(cfg.BreakerFailures),
		cooldown: cfg.BreakerCooldown,
		log:      cfg.Logger,
		interval: cfg.LogInterval,
		history:  cfg.History,
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.base = l.now()
	l.baseNano = l.base.UnixNano()
	l.maxSubj = int64(cfg.FallbackSubjects)
	if l.maxSubj <= 0 {
		l.maxSubj = DefaultMaxSubjects
	}
	if ls, ok := store.(Leaser); ok {
		l.leaser = ls
		l.leases = newLeaseTable(int(l.maxSubj))
	} else if m, ok := store.(*MemoryStore); ok {
		l.maxSubj = int64(m.Cap())
	} else {
		l.local = NewMemoryStore(MaxSubjects(cfg.FallbackSubjects))
	}
	if !l.ban.Disabled {
		l.ban = l.ban.WithDefaults()
	}
	if l.timeout <= 0 {
		l.timeout = time.Second
	}
	if l.trip <= 0 {
		l.trip = 5
	}
	if l.cooldown <= 0 {
		l.cooldown = time.Second
	}
	if l.log == nil {
		l.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if l.interval <= 0 {
		l.interval = time.Minute
	}
	if l.leaser != nil {
		poll := cfg.BanPoll
		if poll <= 0 {
			poll = 250 * time.Millisecond
		}
		ctx, cancel := context.WithCancel(context.Background())
		l.stopWatch, l.watchDone = cancel, make(chan struct{})
		go l.watchBans(ctx, poll)
	}
	return l
}

// clock reads the limiter's clock: the wall time, and the process time in
// nanoseconds. Process time is the wall time at New plus the time elapsed
// since on the monotonic clock, so windows and bans measured on it last
// their length even when the wall clock is stepped; with an injected clock
// (no monotonic reading) it is that clock's time.
func (l *Limiter) clock() (time.Time, int64) {
	wall := l.now()
	return wall, l.baseNano + int64(wall.Sub(l.base))
}

// toWall moves a decision made on process time p to the wall clock read
// at the same moment, for the headers that name instants.
func toWall(d Decision, wall time.Time, p int64) Decision {
	d.At = wall
	shift := time.Duration(wall.UnixNano() - p)
	if shift == 0 {
		return d
	}
	for i := range d.Windows {
		d.Windows[i].Reset = d.Windows[i].Reset.Add(shift)
	}
	d.Binding.Reset = d.Binding.Reset.Add(shift)
	return d
}

// unavailable is the error of a limiter that fails closed while its
// store is unreachable.
func unavailable() error {
	return petstore.Errorf(petstore.CodeUnavailable, "rate limiter unavailable")
}

// invalidLimits is the error of Decide, Refund and History.Report for
// limits that are not valid (petstore.Limits.Valid).
func invalidLimits() error {
	return petstore.Errorf(petstore.CodeInternal, "invalid rate limits")
}

// aggregate returns the subject that counts subject's request: itself, or,
// while the limiter holds most of the subjects it may hold (a flood of new
// addresses), an IPv6 client's /48 instead of its address or /64, so the
// flood costs one subject per /48.
func (l *Limiter) aggregate(subject string) string {
	n := l.subjects()
	switch lv := l.level.Load(); {
	case lv == 0 && n >= l.maxSubj*3/4:
		l.level.Store(1)
	case lv == 1 && n < l.maxSubj/2:
		l.level.Store(0)
	}
	if l.level.Load() == 0 || !anonymous(subject) || l.refusing(subject) {
		return subject // a banned or spent address stays so, flood or not
	}
	kind, rest, _ := strings.Cut(subject, ":")
	var pfx netip.Prefix
	if a, err := netip.ParseAddr(rest); err == nil {
		pfx = netip.PrefixFrom(a, a.BitLen())
	} else if pfx, err = netip.ParsePrefix(rest); err != nil {
		return subject
	}
	if !pfx.Addr().Is6() || pfx.Addr().Is4In6() || pfx.Bits() <= 48 {
		return subject
	}
	p, _ := pfx.Addr().Prefix(48)
	return kind + ":" + p.String()
}

// subjects is how many subjects the limiter's own memory holds.
func (l *Limiter) subjects() int64 {
	switch {
	case l.leases != nil:
		return l.leases.count.Load()
	case l.local != nil:
		return l.local.count.Load()
	default:
		if m, ok := l.store.(*MemoryStore); ok {
			return m.count.Load()
		}
	}
	return 0
}

// Refusing reports whether this process would refuse subject's next
// request without asking the store: a ban it knows of, or a window it
// knows to be full. It counts nothing and never calls the store, so a key
// cache may ask it on every lookup it cannot answer from memory, to pace
// the lookups of a refused client (keycache.Config.Refused). While a flood
// has IPv6 clients counted per /48, a /64 is refused when its /48 is too,
// as Decide refuses it.
func (l *Limiter) Refusing(subject string) bool {
	if l.refusing(subject) {
		return true
	}
	agg := l.aggregate(subject)
	return agg != subject && l.refusing(agg)
}

// refusing is Refusing of subject itself, as it is counted when no flood
// aggregates it.
func (l *Limiter) refusing(subject string) bool {
	wall, p := l.clock()
	if l.leases != nil {
		e := l.leases.peek(subject)
		if e == nil {
			return false
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.banEnd > p || (len(e.rates) == len(e.wins) && e.full(e.rates, p) >= 0)
	}
	s, now := l.local, wall.UnixNano()
	if s == nil {
		s, now = l.store.(*MemoryStore), p
	}
	return s.refusing(subject, now)
}

// Stats are a limiter's figures for metrics.
type Stats struct {
	// Subjects is how many subjects this process holds in memory.
	Subjects int64
	// Evictions counts subjects forgotten to make room since New: never
	// one with a ban, a strike or a full window in force.
	Evictions uint64
	// Aggregation is 0 while addresses are counted as given (IPv6 per
	// /64), 1 while IPv6 clients are counted per /48 under a flood.
	Aggregation int
}

// Stats returns the limiter's figures.
func (l *Limiter) Stats() Stats {
	st := Stats{Subjects: l.subjects(), Aggregation: int(l.level.Load())}
	switch {
	case l.leases != nil:
		st.Evictions = l.leases.evictions.Load()
	case l.local != nil:
		st.Evictions = l.local.Evictions()
	default:
		if m, ok := l.store.(*MemoryStore); ok {
			st.Evictions = m.Evictions()
		}
	}
	return st
}

// errDown is the failure of a call the open breaker did not make.
var errDown = errors.New("ratelimit: store taken for down; waiting to probe it")

// Decide decides one request of subject ("key:<id>" or "ip:<address>")
// under limits, counting it when it is admitted. limits are read on every
// call, so a plan change applies from the next request.
//
// A refusal is not an error: it is a Decision with Allowed false and Code
// rate_limited or api_key_banned. When the store fails, the decision is
// the local fallback's, marked Degraded. Decide returns an error only when
// the limiter fails closed and the store is unreachable (unavailable),
// when the limits are not valid (internal), or when ctx ends before a
// decision; with valid limits the Decision is then Estimate's, Allowed
// false: the figures the answer reports, though nothing was counted. Over
// a shared store, a subject this process holds no running window or ban
// of has no figures here (another process may have spent its quota): the
// Decision is then the zero one.
func (l *Limiter) Decide(ctx context.Context, subject string, limits petstore.Limits) (Decision, error) {
	d, err := l.decide(ctx, subject, limits)
	if err == nil && l.history != nil {
		l.history.Record(subject, d.At, d.Allowed)
	}
	if err != nil && limits.Valid() {
		var known bool
		if d, known = l.estimate(subject, limits); !known {
			d = Decision{}
		}
		d.Allowed = false
	}
	return d, err
}

// Estimate returns subject's windows under limits as this process knows
// them, as Decide would report them, but counting nothing, striking
// nothing and never calling the store: the figures of an answer that no
// decision was made for. Allowed says whether the windows and bans known
// here leave room. It returns the zero Decision for limits that are not
// valid.
func (l *Limiter) Estimate(subject string, limits petstore.Limits) Decision {
	d, _ := l.estimate(subject, limits)
	return d
}

// estimate is Estimate, and whether this process knows subject's figures:
// always over its own MemoryStore, which holds them all; over a shared
// store, only while it holds a running window or a ban of subject.
func (l *Limiter) estimate(subject string, limits petstore.Limits) (Decision, bool) {
	if !limits.Valid() {
		return Decision{}, false
	}
	subject = l.aggregate(subject)
	rates := Rates(limits)
	counts := make([]WindowCount, len(rates))
	wall, p := l.clock()
	if l.leases != nil {
		e := l.leases.peek(subject)
		if e == nil {
			e = &lease{}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.refresh(p, len(rates))
		if e.banEnd > p {
			return l.leaseDecision(rates, wall, p, false, -1, e.banEnd, false, e, counts, false), true
		}
		known := false
		for _, w := range e.wins {
			known = known || w.end > 0
		}
		full := e.full(rates, p)
		return l.leaseDecision(rates, wall, p, full < 0, full, 0, false, e, counts, true), known
	}
	s, now := l.local, wall
	if s == nil {
		s, now = l.store.(*MemoryStore), time.Unix(0, p)
	}
	full, banEnd, known := s.peek(subject, rates, now.UnixNano(), counts)
	var end time.Time
	if banEnd > 0 {
		end = time.Unix(0, banEnd)
	}
	d := toWall(decideWindows(rates, now, full < 0 && banEnd == 0, full, banEnd > 0, end, false, counts), wall, now.UnixNano())
	return d, known || l.local == nil
}

func (l *Limiter) decide(ctx context.Context, subject string, limits petstore.Limits) (Decision, error) {
	if !limits.Valid() {
		return Decision{}, invalidLimits()
	}
	subject = l.aggregate(subject)
	if l.leaser != nil {
		return l.decideLeased(ctx, subject, Rates(limits))
	}
	wall, p := l.clock()
	if l.local == nil {
		return l.decideInMemory(ctx, subject, limits, wall, p)
	}
	// A shared store: behind the breaker, mirrored in l.local.
	req := Request{Subject: subject, Rates: Rates(limits), Now: wall, Ban: l.ban}
	call, probe := l.callable(p)
	if !call {
		return l.fallback(ctx, req, errDown)
	}
	var err error
	var res Result
	// What this process admitted on its own is told first, so that the
	// store's count includes it before it decides this request.
	debtor, _ := l.store.(Debtor)
	var debts []Settlement
	if debtor != nil {
		debts = l.local.takeDebts(req)
	}
	l.local.begin(req)
	if debts != nil {
		err = l.owe(ctx, debtor, req, debts)
		if err != nil {
			l.local.putBackDebts(req, debts)
		}
	}
	if err == nil {
		res, err = l.take(ctx, req)
	}
	if err == nil && len(res.Windows) != len(req.Rates) {
		err = fmt.Errorf("ratelimit: store returned %d windows for %d rates", len(res.Windows), len(req.Rates))
	}
	if err != nil {
		l.local.end(req, nil)
	} else {
		l.local.end(req, &res)
	}
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up; that says nothing about the store.
			if probe {
				l.probing.Store(false)
			}
			return Decision{}, ctx.Err()
		}
		// The failure's own time: a call that hung for the timeout
		// must count the time it hung against the store.
		_, pf := l.clock()
		l.failed(pf, err, probe)
		return l.fallback(ctx, req, err)
	}
	l.succeeded(p)
	return decide(req, res), nil
}

// decideInMemory is decide when the store is the MemoryStore, which never
// waits on anything but its own short critical section: no breaker, no
// fallback, no timer, and the request's rates and counts on the stack
// rather than the heap, as the store is called directly.
func (l *Limiter) decideInMemory(ctx context.Context, subject string, limits petstore.Limits, wall time.Time, p int64) (Decision, error) {
	var rateArr [2]Rate
	var counts [2]WindowCount
	rates := appendRates(rateArr[:0], limits)
	now := time.Unix(0, p)
	res, err := l.store.(*MemoryStore).take(ctx, subject, rates, now, l.ban, counts[:len(rates)])
	if err != nil {
		return Decision{}, err // only ctx ends a MemoryStore's take
	}
	// The ban's end is made anew from its nanoseconds (the store made it
	// the same way): passed as it is, res would escape whole, counts with
	// it.
	var banEnd time.Time
	if res.Banned {
		banEnd = time.Unix(0, res.BanEnd.UnixNano())
	}
	return toWall(decideWindows(rates, now, res.Allowed, res.Refused, res.Banned, banEnd, res.BanStarted, res.Windows), wall, p), nil
}

// callable reports whether this request may call the store (the breaker
// is closed, or its cool-down is over and this request is the probe) and
// whether it is the probe.
func (l *Limiter) callable(p int64) (call, probe bool) {
	if !l.open.Load() {
		return true, false
	}
	if p-l.openedAt.Load() < int64(l.cooldown) {
		return false, false
	}
	probe = l.probing.CompareAndSwap(false, true)
	return probe, probe
}

// fallback decides req locally after the store failed with err, or
// refuses to decide when failing closed and the store is unreachable.
func (l *Limiter) fallback(ctx context.Context, req Request, err error) (Decision, error) {
	if !l.failOpen && l.hard.Load() {
		return Decision{}, unavailable()
	}
	res, lerr := l.local.Take(ctx, req)
	if lerr != nil {
		return Decision{}, lerr // only ctx ends a MemoryStore's Take
	}
	l.fallbacks.Add(1)
	d := decide(req, res)
	d.Degraded = true
	return d, nil
}

// isTimeout reports whether err says the store was slow rather than
// unreachable: a deadline, not a refused or reset connection.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// take calls the store within the timeout, turning a panic into an error:
// a broken store must not take the server down with it.
func (l *Limiter) take(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ratelimit: store panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	res, err = l.store.Take(ctx, req)
	if err == nil && ctx.Err() != nil {
		// A store that ignored the deadline still failed to meet it.
		err = ctx.Err()
	}
	return res, err
}

// owe tells debtor the debts of req's subject within the timeout, turning
// a panic into an error.
func (l *Limiter) owe(ctx context.Context, debtor Debtor, req Request, debts []Settlement) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ratelimit: store panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	err = debtor.Owe(ctx, req, debts)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

// succeeded records a store call that worked at process time p, ending
// any outage.
func (l *Limiter) succeeded(p int64) {
	l.lastOK.Store(p)
	if l.inRow.Load() != 0 {
		l.inRow.Store(0)
	}
	if !l.degraded.Load() || !l.degraded.CompareAndSwap(true, false) {
		return
	}
	l.hard.Store(false)
	l.open.Store(false)
	l.probing.Store(false)
	l.log.Info("rate limit store recovered",
		"outage", time.Duration(p-l.since.Load()).Round(time.Millisecond).String(),
		"failures", l.failures.Load(), "local_decisions", l.fallbacks.Load())
}

// failed records a store call that failed at process time p: it starts
// an outage, or opens the breaker when failures keep coming with no
// success for a StoreTimeout. Every outage's start is logged; while one
// lasts, a line at most every LogInterval.
func (l *Limiter) failed(p int64, err error, probe bool) {
	l.failures.Add(1)
	l.hard.Store(!isTimeout(err))
	n := l.inRow.Add(1)
	switch {
	case probe:
		// The probe failed: wait a cool-down again.
		l.openedAt.Store(p)
		l.probing.Store(false)
	case !l.open.Load() && n >= l.trip && p-l.lastOK.Load() >= int64(l.timeout):
		// Once open, failures (of calls made before, or of the ban poll)
		// leave the cool-down as it is, so the probes keep coming.
		l.openedAt.Store(p)
		l.open.Store(true)
	}
	started := !l.degraded.Load() && l.degraded.CompareAndSwap(false, true)
	if started {
		l.since.Store(p)
		l.lastLog.Store(p)
	} else {
		last := l.lastLog.Load()
		if p-last < int64(l.interval) || !l.lastLog.CompareAndSwap(last, p) {
			return // logged lately, or another goroutine logs this one
		}
	}
	what := "deciding locally"
	if !l.failOpen {
		what = "refusing while unreachable, deciding locally while slow"
	}
	l.log.Error("rate limit store failed; "+what,
		"error", err, "failures", l.failures.Load(),
		"since", l.wallOf(l.since.Load()).UTC().Format(time.RFC3339Nano))
}

// wallOf turns a process time into the wall time it stood for at New.
func (l *Limiter) wallOf(p int64) time.Time {
	return l.base.Add(time.Duration(p - l.baseNano))
}

// Status is the state of a Limiter's store, for a readiness check, a
// metric or an operator.
type Status struct {
	// Degraded is true from a failed store call to the next successful
	// one: decisions are the local fallback's (or refused, failing
	// closed, while the store is unreachable).
	Degraded bool
	// Unreachable is true while the store's last call failed without
	// timing out: it refused or dropped the connection. A store that is
	// only slow (calls time out) is not unreachable, even while the
	// breaker spares it calls. A limiter that fails closed refuses every
	// request while it is unreachable.
	Unreachable bool
	// FailClosed reports the limiter's mode (Config.FailClosed).
	FailClosed bool
	// Since is when the current outage began, by the limiter's clock;
	// zero when the store is healthy.
	Since time.Time
	// Failures counts failed store calls since New.
	Failures uint64
	// LocalDecisions counts the decisions the local fallback took since New.
	LocalDecisions uint64
}

// Ready reports whether the limiter serves requests: false only when it
// fails closed and the store is unreachable, the case a /readyz check
// should report.
func (s Status) Ready() bool { return !(s.FailClosed && s.Unreachable) }

// Status returns the state of the limiter's store.
func (l *Limiter) Status() Status {
	st := Status{
		Degraded:       l.degraded.Load(),
		FailClosed:     !l.failOpen,
		Failures:       l.failures.Load(),
		LocalDecisions: l.fallbacks.Load(),
	}
	if st.Degraded {
		st.Unreachable = l.hard.Load()
		st.Since = l.wallOf(l.since.Load())
	}
	return st
}

// Degraded reports whether the last store call failed: while it is true,
// requests are decided by the local fallback (or refused, failing closed,
// while the store is unreachable). Status says more.
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Failures returns how many store calls have failed since New, for a
// metric or a health check.
func (l *Limiter) Failures() uint64 { return l.failures.Load() }

// decide turns a store result into a Decision.
func decide(req Request, res Result) Decision {
	return decideWindows(req.Rates, req.Now, res.Allowed, res.Refused, res.Banned, res.BanEnd, res.BanStarted, res.Windows)
}

// decideWindows is decide with the request and result apart, so that
// rates and counts on a caller's stack can stay there (see
// MemoryStore.take).
func decideWindows(rates []Rate, now time.Time, allowed bool, refused int, banned bool, banEnd time.Time, banStarted bool, counts []WindowCount) Decision {
	d := Decision{Allowed: allowed, At: now, Windows: make([]Window, len(rates))}
	binding := 0
	for i, r := range rates {
		d.Windows[i] = Window{
			Name:      r.Name,
			Quota:     r.Quota,
			Length:    r.Period,
			Remaining: max(0, r.Quota-counts[i].Used),
			Reset:     counts[i].Reset,
		}
		// Strictly fewer: on a tie the earlier, shorter window binds.
		if d.Windows[i].Remaining < d.Windows[binding].Remaining {
			binding = i
		}
	}
	switch {
	case banned:
		// No window admits anything before the ban ends, whatever its own
		// count says, so every window reports nothing left until then: the
		// IETF header must not promise requests a 900 s Retry-After denies.
		for i := range d.Windows {
			d.Windows[i].Remaining = 0
			d.Windows[i].Reset = banEnd
		}
		d.Allowed = false
		d.BanStarted = banStarted
		d.Code = petstore.CodeAPIKeyBanned
		d.Binding = d.Windows[binding]
		d.RetryAfter = retryAfter(now, banEnd)
	case !allowed:
		if refused >= 0 && refused < len(d.Windows) {
			binding = refused
		}
		// A request needs room in every window: when another one is full
		// too and ends later, that one says when a request is admitted.
		for i, w := range d.Windows {
			if w.Remaining == 0 && w.Reset.After(d.Windows[binding].Reset) {
				binding = i
			}
		}
		d.Code = petstore.CodeRateLimited
		d.Windows[binding].Remaining = 0
		d.Binding = d.Windows[binding]
		d.RetryAfter = retryAfter(now, d.Binding.Reset)
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
