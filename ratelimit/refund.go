package ratelimit

import (
	"context"
	"time"

	"github.com/petstorekit/petstore"
)

// A Refunder is a Store that can give back one request it admitted.
// Refund takes one request off each of req.Rates' windows of req.Subject
// that is still running at req.Now (a window that ended has nothing left
// to give back); it never starts a window, a strike or a ban.
type Refunder interface {
	Refund(ctx context.Context, req Request) error
}

// Refund gives back one request of subject that Decide admitted under
// limits: for a request the server could not serve after all (a database
// outage), so that it spends no quota. It does nothing when the store is
// not a Refunder. With a store that leases shares (Leaser) it goes back
// into this process's share; while a shared store is failing, the local fallback's
// count is given back instead.
func (l *Limiter) Refund(ctx context.Context, subject string, limits petstore.Limits) error {
	if !limits.Valid() {
		return petstore.Errorf(petstore.CodeInternal, "invalid rate limits")
	}
	subject = l.aggregate(subject)
	rates := Rates(limits)
	wall, p := l.clock()
	switch {
	case l.leaser != nil:
		// The unit goes back into this process's share, while every
		// window it was taken from still runs; the share returns to the
		// store like any other.
		if e := l.leases.peek(subject); e != nil {
			e.mu.Lock()
			e.refresh(p, len(rates))
			running := len(e.wins) > 0
			for _, w := range e.wins {
				running = running && w.end > p
			}
			if running {
				e.grant++
			}
			e.mu.Unlock()
		}
		return nil
	case l.local == nil:
		// The in-memory store counts on process time (decideInMemory).
		return l.store.(Refunder).Refund(ctx, Request{Subject: subject, Rates: rates, Now: time.Unix(0, p)})
	}
	store := l.store
	if l.open.Load() {
		store = l.local
	}
	if r, ok := store.(Refunder); ok {
		return r.Refund(ctx, Request{Subject: subject, Rates: rates, Now: wall})
	}
	return nil
}

// Refund implements Refunder.
func (s *MemoryStore) Refund(ctx context.Context, req Request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(req.Subject)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.subjects[req.Subject]
	if e == nil {
		return nil
	}
	now := req.Now.UnixNano()
	for i := range e.windows {
		w := &e.windows[i]
		for _, r := range req.Rates {
			if w.period == r.Period && w.end > now && w.used > 0 {
				w.used--
				w.local = max(w.local-1, 0)
			}
		}
	}
	return nil
}
