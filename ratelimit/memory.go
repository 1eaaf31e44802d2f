package ratelimit

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryStore is the Store of a single process: counters in a sharded map,
// each shard behind its own mutex, so subjects on different shards never
// contend. Expired entries are swept from a shard, at most once per sweep
// interval, by the requests that reach it; no goroutine runs in the
// background and no clock is read, so time is only what requests say it is.
//
// The store holds at most MaxSubjects evictable subjects
// (DefaultMaxSubjects unless set): when a shard is full, its least
// recently used evictable subject is evicted, so a flood of new addresses
// costs bounded memory (about 250 bytes a subject) instead of growing for
// as long as the flood lasts. An evicted subject starts over with fresh
// windows: under such a flood the limiter forgets its quietest subjects
// first, never the ones still sending. What must not be forgotten is kept
// apart and never evicted: every key's subject (keys come only from the
// key store, which bounds them), and every subject with a ban, a ban level,
// strikes or a full window still in force. An address kept apart goes
// back among the evictable ones at the first sweep after its state ends,
// and a key's subject leaves once its windows end. An address can only get
// there by sending a window's quota, so a flood of new addresses cannot
// grow that part. A sweep that leaves a
// shard much smaller than it was rebuilds its map, so the memory returns
// once the windows end.
//
// The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	shards    [memShards]memShard
	seed      maphash.Seed // random per store; see shard
	evictions atomic.Uint64
	count     atomic.Int64 // subjects held
}

const (
	memShards     = 64
	sweepInterval = time.Minute
)

// DefaultMaxSubjects is how many subjects a MemoryStore holds unless
// MaxSubjects says otherwise: about 25 MB.
const DefaultMaxSubjects = 100_000

type memShard struct {
	mu        sync.Mutex
	subjects  map[string]*memEntry
	lru       memEntry // sentinel of the recency list of evictable subjects: lru.next is the newest
	lruLen    int      // subjects on the list
	max       int      // evictable subjects this shard holds at most
	peak      int      // the most subjects since the map was last rebuilt
	nextSweep time.Time
}

// memEntry is everything known about one subject. Times are Unix
// nanoseconds; an end at or before now means "not running".
type memEntry struct {
	key         string
	prev, next  *memEntry // the shard's recency list; nil when kept apart
	windows     []memWindow
	strikes     int64
	strikesEnd  int64
	banEnd      int64
	banLevel    int64
	banLevelEnd int64 // the ban level is forgotten after this
	pending     int64 // a Limiter's shared calls in flight (see begin)
}

type memWindow struct {
	period time.Duration
	used   int64
	end    int64
	local  int64 // admitted here while mirroring a shared store (see observe)
	full   bool  // the window reached its quota: kept until it ends
}

var _ Store = (*MemoryStore)(nil)

// MemoryOption configures a MemoryStore.
type MemoryOption func(*MemoryStore)

// MaxSubjects caps the subjects a MemoryStore holds at n, rounded down to
// a multiple of its 64 shards (and at least 64); n <= 0 keeps the default.
func MaxSubjects(n int) MemoryOption {
	return func(s *MemoryStore) {
		if n <= 0 {
			return
		}
		per := max(1, n/memShards)
		for i := range s.shards {
			s.shards[i].max = per
		}
	}
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{seed: maphash.MakeSeed()}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.subjects = make(map[string]*memEntry)
		sh.lru.next, sh.lru.prev = &sh.lru, &sh.lru
		sh.max = DefaultMaxSubjects / memShards
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Len returns the number of subjects the store holds, expired or not yet
// swept ones included. It exists so tests can see the sweep and the cap
// work.
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.subjects)
		sh.mu.Unlock()
	}
	return n
}

// Cap returns the most subjects the store holds.
func (s *MemoryStore) Cap() int { return s.shards[0].max * memShards }

// Evictions returns how many subjects were evicted, still live, to make
// room for new ones since NewMemoryStore: a figure for a metric, and a sign
// that the cap is too small for the traffic when it grows steadily.
func (s *MemoryStore) Evictions() uint64 { return s.evictions.Load() }

// entry returns subject's entry, the most recently used from now on,
// creating it (and evicting the least recently used subject when the
// shard is full) when there is none. It sweeps the shard when its sweep
// is due. sh.mu must be held.
func (s *MemoryStore) entry(sh *memShard, subject string, now time.Time) *memEntry {
	if now.After(sh.nextSweep) {
		s.sweep(sh, now.UnixNano())
		sh.nextSweep = now.Add(sweepInterval)
	}
	if e := sh.subjects[subject]; e != nil {
		if e.prev != nil && sh.lru.next != e { // a busy subject is already in front
			sh.unlink(e)
			sh.pushFront(e)
		}
		return e
	}
	n := now.UnixNano()
	for sh.lruLen >= sh.max {
		old := sh.lru.prev
		sh.unlink(old)
		if old.kept(n) {
			continue // kept apart, off the list, until its state ends
		}
		if old.liveUntil() > n {
			s.evictions.Add(1)
		}
		delete(sh.subjects, old.key)
		s.count.Add(-1)
	}
	e := &memEntry{key: subject}
	sh.subjects[subject] = e
	s.count.Add(1)
	if !strings.HasPrefix(subject, "key:") {
		sh.pushFront(e)
	}
	sh.peak = max(sh.peak, len(sh.subjects))
	return e
}

// kept reports whether e holds state that must not be forgotten at n: a
// ban, a ban level, strikes or a full window.
func (e *memEntry) kept(n int64) bool {
	return e.banEnd > n || e.banLevelEnd > n || e.strikesEnd > n || e.fullAt(n)
}

func (sh *memShard) unlink(e *memEntry) {
	if e.prev == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	sh.lruLen--
}

func (sh *memShard) pushFront(e *memEntry) {
	e.prev, e.next = &sh.lru, sh.lru.next
	sh.lru.next.prev = e
	sh.lru.next = e
	sh.lruLen++
}

func (sh *memShard) pushBack(e *memEntry) {
	e.prev, e.next = sh.lru.prev, &sh.lru
	sh.lru.prev.next = e
	sh.lru.prev = e
	sh.lruLen++
}

// Take implements Store.
func (s *MemoryStore) Take(ctx context.Context, req Request) (Result, error) {
	return s.take(ctx, req.Subject, req.Rates, req.Now, req.Ban, make([]WindowCount, len(req.Rates)))
}

// take is Take with the request's fields apart and the result's windows
// in counts, len(rates) long. A Limiter deciding in memory passes rates
// and counts on its stack: they stay there because take keeps neither,
// which the compiler can only tell while they are not fields of a
// Request whose subject and time are kept.
func (s *MemoryStore) take(ctx context.Context, subject string, rates []Rate, at time.Time, ban BanPolicy, counts []WindowCount) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	now := at.UnixNano()
	sh := s.shard(subject)
	res := Result{Refused: -1, Windows: counts}

	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := s.entry(sh, subject, at)

	// Find each rate's window; expired ones read as empty.
	var idx [8]int
	wins := idx[:0]
	for _, r := range rates {
		wins = append(wins, e.window(r.Period))
	}
	for i, r := range rates {
		w := &e.windows[wins[i]]
		if w.end <= now {
			w.used, w.end, w.local, w.full = 0, 0, 0, false
		}
		// Shared calls still in flight may each be admitted: count them.
		if !res.Allowed && res.Refused < 0 && w.used+e.pending+1 > r.Quota {
			res.Refused = i
		}
	}

	if res.Refused >= 0 {
		e.windows[wins[res.Refused]].full = true
	}
	switch {
	case e.banEnd > now:
		res.Banned, res.BanEnd = true, time.Unix(0, e.banEnd)
		res.Refused = -1
	case res.Refused < 0:
		res.Allowed = true
		for i, r := range rates {
			w := &e.windows[wins[i]]
			if w.end == 0 {
				w.end = now + int64(r.Period)
			}
			w.used++
			w.local++
			w.full = w.used >= r.Quota
		}
	case !ban.Disabled:
		p := ban.WithDefaults()
		if e.strikesEnd <= now {
			e.strikes, e.strikesEnd = 0, now+int64(p.Within)
		} else if now < e.strikesEnd-int64(p.Within)+int64(p.GraceOrZero()) {
			break // within the grace: this request may not have seen the first 429
		}
		e.strikes++
		if e.strikes > p.Strikes {
			if e.banLevelEnd <= now {
				e.banLevel = 0
			}
			e.banLevel++
			e.banEnd = now + int64(p.BanLength(e.banLevel))
			e.banLevelEnd = e.banEnd + int64(p.Memory)
			e.strikes, e.strikesEnd = 0, 0
			res.Banned, res.BanEnd = true, time.Unix(0, e.banEnd)
			res.BanStarted = true
		}
	}

	for i, r := range rates {
		w := e.windows[wins[i]]
		end := w.end
		if end == 0 {
			end = now + int64(r.Period)
		}
		res.Windows[i] = WindowCount{Used: w.used, Reset: time.Unix(0, end)}
	}
	return res, nil
}

// window returns the index of e's window of the given period, adding it
// when the subject has none yet.
func (e *memEntry) window(period time.Duration) int {
	for i := range e.windows {
		if e.windows[i].period == period {
			return i
		}
	}
	e.windows = append(e.windows, memWindow{period: period})
	return len(e.windows) - 1
}

// sweep deletes the subjects whose windows, strikes, ban and ban level have
// all ended, and puts back among the evictable ones, as the least recently
// used, the addresses kept apart whose ban, strikes or full window has
// ended since (their other windows may run for a day yet). A Go map keeps
// its buckets when entries are deleted, so when the shard has shrunk to a
// quarter of its peak the map is rebuilt, and the memory a flood took
// returns.
func (s *MemoryStore) sweep(sh *memShard, now int64) {
	for k, e := range sh.subjects {
		switch {
		case e.liveUntil() <= now:
			sh.unlink(e)
			delete(sh.subjects, k)
			s.count.Add(-1)
		case e.prev == nil && !strings.HasPrefix(k, "key:") && !e.kept(now):
			sh.pushBack(e)
		}
	}
	if n := len(sh.subjects); sh.peak >= 64 && n < sh.peak/4 {
		m := make(map[string]*memEntry, n)
		for k, e := range sh.subjects {
			m[k] = e
		}
		sh.subjects, sh.peak = m, n
	}
}

func (e *memEntry) liveUntil() int64 {
	end := max(e.strikesEnd, e.banEnd, e.banLevelEnd)
	for _, w := range e.windows {
		end = max(end, w.end)
	}
	return end
}

// shard returns the shard of a subject. maphash is a few nanoseconds
// for any length, where a byte-by-byte hash cost some 50 ns a decision
// for a key's subject; its seed, random per store, also keeps a client
// from choosing addresses that all land on one shard.
func (s *MemoryStore) shard(subject string) *memShard {
	return &s.shards[maphash.String(s.seed, subject)%memShards]
}

// begin records that a Limiter is asking the shared store about req; end
// records the answer (res nil when the call failed). Together they make
// this store a mirror of the shared one, from which the Limiter decides
// when the shared store fails: a window counts what the shared store last
// said, plus what this process admitted locally in it, plus the shared
// calls still in flight (each may be admitted). So a window known to be
// full stays full, a known ban stays in force, and a call that times out
// while many others wait never admits what they may already have taken.
func (s *MemoryStore) begin(req Request) {
	sh := s.shard(req.Subject)
	sh.mu.Lock()
	s.entry(sh, req.Subject, req.Now).pending++
	sh.mu.Unlock()
}

// end: see begin.
func (s *MemoryStore) end(req Request, res *Result) {
	sh := s.shard(req.Subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := s.entry(sh, req.Subject, req.Now)
	e.pending = max(0, e.pending-1) // an eviction may have reset it
	if res == nil {
		return
	}
	for i, r := range req.Rates {
		if i >= len(res.Windows) {
			break
		}
		w := &e.windows[e.window(r.Period)]
		end := res.Windows[i].Reset.UnixNano()
		if end != w.end {
			w.local = 0 // another window: what was admitted here is past
		}
		w.used, w.end = res.Windows[i].Used+w.local, end
		// Refusing reads it: a window the shared store says is spent.
		w.full = w.used >= r.Quota
	}
	if res.Banned {
		e.banEnd = max(e.banEnd, res.BanEnd.UnixNano())
	}
}

// takeDebts takes out what this process admitted on its own in req's
// windows that still run at req.Now (see end), to be told to the shared
// store; nil when nothing. putBackDebts puts it back when the store could
// not be told.
func (s *MemoryStore) takeDebts(req Request) []Settlement {
	sh := s.shard(req.Subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[req.Subject]
	if e == nil {
		return nil
	}
	now := req.Now.UnixNano()
	var debts []Settlement
	for i, r := range req.Rates {
		for j := range e.windows {
			w := &e.windows[j]
			if w.period != r.Period || w.end <= now || w.local == 0 {
				continue
			}
			if debts == nil {
				debts = make([]Settlement, len(req.Rates))
			}
			debts[i] = Settlement{Debt: w.local, End: time.Unix(0, w.end)}
			w.local = 0
		}
	}
	return debts
}

// putBackDebts: see takeDebts. A window that ended or began since gets
// nothing back: what was admitted in it is past.
func (s *MemoryStore) putBackDebts(req Request, debts []Settlement) {
	sh := s.shard(req.Subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[req.Subject]
	if e == nil {
		return
	}
	for i, r := range req.Rates {
		for j := range e.windows {
			w := &e.windows[j]
			if w.period == r.Period && i < len(debts) && w.end == debts[i].End.UnixNano() {
				w.local += debts[i].Debt
			}
		}
	}
}

// refusing reports whether subject is banned or has a full window at now
// (Unix ns), without counting anything.
func (s *MemoryStore) refusing(subject string, now int64) bool {
	sh := s.shard(subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[subject]
	return e != nil && (e.banEnd > now || e.fullAt(now))
}

// peek puts subject's windows under rates at now (nanoseconds) in counts,
// counting nothing, and returns the first full one (-1: none) and the end
// of its ban (0: none).
func (s *MemoryStore) peek(subject string, rates []Rate, now int64, counts []WindowCount) (full int, banEnd int64, known bool) {
	sh := s.shard(subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[subject]
	full = -1
	for i, r := range rates {
		counts[i] = WindowCount{Reset: time.Unix(0, now+int64(r.Period))}
		if e == nil {
			continue
		}
		for _, w := range e.windows {
			if w.period == r.Period && w.end > now {
				known = true
				counts[i] = WindowCount{Used: w.used, Reset: time.Unix(0, w.end)}
				if full < 0 && w.used >= r.Quota {
					full = i
				}
			}
		}
	}
	if e != nil && e.banEnd > now {
		banEnd, known = e.banEnd, true
	}
	return full, banEnd, known
}

// fullAt reports whether one of e's windows is full at now.
func (e *memEntry) fullAt(now int64) bool {
	for _, w := range e.windows {
		if w.full && w.end > now {
			return true
		}
	}
	return false
}
