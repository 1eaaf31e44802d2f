package ratelimit

import (
	"context"
	"sort"
	"time"
)

// Ban is a ban in force.
type Ban struct {
	Subject string    `json:"subject"` // "key:<id>", "ip:<address>" or "pub:<address>"
	Until   time.Time `json:"until"`   // when it ends
}

// Admin is what an operator asks of a Store: the bans in force, lifting
// one, and a subject's counts. MemoryStore and adapters/redislimit
// implement it. Like Store, it answers in the terms of now, the caller's.
// Implementations must be safe for concurrent use with Take.
type Admin interface {
	// Bans returns the bans in force at now, ordered by subject.
	Bans(ctx context.Context, now time.Time) ([]Ban, error)
	// Lift ends subject's ban and forgets its strikes and ban level, so
	// its next ban is a first one again. It reports whether a ban was in
	// force at now.
	Lift(ctx context.Context, subject string, now time.Time) (bool, error)
	// Usage returns subject's windows at now, in rates order, as Decide
	// would report them, without counting anything: Remaining is what
	// the quota leaves, and a window that is not running is empty.
	Usage(ctx context.Context, subject string, rates []Rate, now time.Time) ([]Window, error)
}

var _ Admin = (*MemoryStore)(nil)

// Bans implements Admin.
func (s *MemoryStore) Bans(ctx context.Context, now time.Time) ([]Ban, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := now.UnixNano()
	out := []Ban{}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.subjects {
			if e.banEnd > n {
				out = append(out, Ban{Subject: k, Until: time.Unix(0, e.banEnd)})
			}
		}
		sh.mu.Unlock()
	}
	SortBans(out)
	return out, nil
}

// Lift implements Admin.
func (s *MemoryStore) Lift(ctx context.Context, subject string, now time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	sh := s.shard(subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[subject]
	if e == nil {
		return false, nil
	}
	was := e.banEnd > now.UnixNano()
	e.banEnd, e.banLevel, e.banLevelEnd, e.strikes, e.strikesEnd = 0, 0, 0, 0, 0
	return was, nil
}

// Usage implements Admin.
func (s *MemoryStore) Usage(ctx context.Context, subject string, rates []Rate, now time.Time) ([]Window, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := now.UnixNano()
	counts := make([]WindowCount, len(rates))
	for i, r := range rates {
		counts[i] = WindowCount{Reset: now.Add(r.Period)}
	}
	sh := s.shard(subject)
	sh.mu.Lock()
	if e := sh.subjects[subject]; e != nil {
		for i, r := range rates {
			for _, w := range e.windows {
				if w.period == r.Period && w.end > n {
					counts[i] = WindowCount{Used: w.used, Reset: time.Unix(0, w.end)}
				}
			}
		}
	}
	sh.mu.Unlock()
	return UsageWindows(rates, counts), nil
}

// UsageWindows turns a store's counts into the Windows Usage reports.
func UsageWindows(rates []Rate, counts []WindowCount) []Window {
	out := make([]Window, len(rates))
	for i, r := range rates {
		out[i] = Window{Name: r.Name, Quota: r.Quota, Length: r.Period, Remaining: max(0, r.Quota-counts[i].Used), Reset: counts[i].Reset}
	}
	return out
}

// SortBans orders bans by subject, the order Admin.Bans returns.
func SortBans(b []Ban) {
	sort.Slice(b, func(i, j int) bool { return b[i].Subject < b[j].Subject })
}
