package ratelimit

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is the Store of a single process: counters in a sharded map,
// each shard behind its own mutex, so subjects on different shards never
// contend. Expired entries are swept from a shard, at most once per sweep
// interval, by the requests that reach it; no goroutine runs in the
// background and no clock is read, so time is only what requests say it is.
//
// The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	shards [memShards]memShard
}

const (
	memShards     = 64
	sweepInterval = time.Minute
)

type memShard struct {
	mu        sync.Mutex
	subjects  map[string]*memEntry
	nextSweep time.Time
	_         [40]byte // keep shards on separate cache lines
}

// memEntry is everything known about one subject. Times are Unix
// nanoseconds; an end at or before now means "not running".
type memEntry struct {
	windows     []memWindow
	strikes     int64
	strikesEnd  int64
	banEnd      int64
	banLevel    int64
	banLevelEnd int64 // the ban level is forgotten after this
}

type memWindow struct {
	period time.Duration
	used   int64
	end    int64
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{}
	for i := range s.shards {
		s.shards[i].subjects = make(map[string]*memEntry)
	}
	return s
}

// Len returns the number of subjects the store holds, expired or not yet
// swept ones included. It exists so tests can see the sweep work.
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

// Take implements Store.
func (s *MemoryStore) Take(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	now := req.Now.UnixNano()
	sh := &s.shards[shardOf(req.Subject)]
	res := Result{Refused: -1, Windows: make([]WindowCount, len(req.Rates))}

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if req.Now.After(sh.nextSweep) {
		sh.sweep(now)
		sh.nextSweep = req.Now.Add(sweepInterval)
	}
	e := sh.subjects[req.Subject]
	if e == nil {
		e = &memEntry{}
		sh.subjects[req.Subject] = e
	}

	// Find each rate's window; expired ones read as empty.
	var idx [8]int
	wins := idx[:0]
	for _, r := range req.Rates {
		wins = append(wins, e.window(r.Period))
	}
	for i, r := range req.Rates {
		w := &e.windows[wins[i]]
		if w.end <= now {
			w.used, w.end = 0, 0
		}
		if !res.Allowed && res.Refused < 0 && w.used+1 > r.Quota {
			res.Refused = i
		}
	}

	switch {
	case e.banEnd > now:
		res.Banned, res.BanEnd = true, time.Unix(0, e.banEnd)
		res.Refused = -1
	case res.Refused < 0:
		res.Allowed = true
		for i, r := range req.Rates {
			w := &e.windows[wins[i]]
			if w.end == 0 {
				w.end = now + int64(r.Period)
			}
			w.used++
		}
	case !req.Ban.Disabled:
		p := req.Ban.WithDefaults()
		if e.strikesEnd <= now {
			e.strikes, e.strikesEnd = 0, now+int64(p.Within)
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
		}
	}

	for i, r := range req.Rates {
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
// all ended.
func (sh *memShard) sweep(now int64) {
	for k, e := range sh.subjects {
		if e.liveUntil() <= now {
			delete(sh.subjects, k)
		}
	}
}

func (e *memEntry) liveUntil() int64 {
	end := max(e.strikesEnd, e.banEnd, e.banLevelEnd)
	for _, w := range e.windows {
		end = max(end, w.end)
	}
	return end
}

// shardOf hashes a subject with FNV-1a: cheap, allocation-free and good
// enough to spread subjects over the shards.
func shardOf(s string) int {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int(h % memShards)
}
