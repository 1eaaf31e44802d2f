package ratelimit

import (
	"context"
	"time"

	"github.com/petstorekit/petstore"
)

// A Refunder is a Store that can give back one request it admitted.
// Refund takes one request off each of req.Rates' windows of req.Subject
// that the request was admitted in, req.Now being the instant it was
// admitted: a window that has ended since, or begun since, never gets it
// (the one would have nothing to give back, the other would admit one
// more than its quota). It never starts a window, a strike or a ban.
type Refunder interface {
	// Refund gives back one request admitted at req.Now, as above.
	Refund(ctx context.Context, req Request) error
}

// Refund gives back one request of subject that Decide admitted under
// limits at the instant at (the Decision's At): for a request the server
// could not serve after all (a database outage), so that it spends no
// quota. Only the windows that were running at that instant and still
// run get it back, so a refund never lets a later window over its quota.
// With a store that leases shares (Leaser) the unit goes back into this
// process's share, or, once one of its windows has ended, to the store's
// others that still run; with a shared store that does not, into the store
// when it is a Refunder (and this process's mirror of it, so that Refusing
// says so at once), or into the local fallback while the store is taken
// for down. A zero at means now.
func (l *Limiter) Refund(ctx context.Context, subject string, limits petstore.Limits, at time.Time) error {
	if !limits.Valid() {
		return invalidLimits()
	}
	subject = l.aggregate(subject)
	rates := Rates(limits)
	wall, p := l.clock()
	if at.IsZero() {
		at = wall
	}
	pAt := l.baseNano + int64(at.Sub(l.base)) // at on process time
	switch {
	case l.leaser != nil:
		if e := l.leases.peek(subject); e != nil {
			e.mu.Lock()
			e.refresh(p, len(rates))
			running := make([]bool, len(e.wins)) // still the window it was admitted in
			all := true
			for i, w := range e.wins {
				running[i] = w.end > pAt && w.end-int64(rates[i].Period) <= pAt
				all = all && running[i]
			}
			if all { // back into the share, for any window
				e.grant++
			} else { // back to the store, for those windows only
				for i := range e.wins {
					if running[i] {
						e.wins[i].returned++
					}
				}
			}
			e.mu.Unlock()
		}
		return nil
	case l.local == nil:
		// The in-memory store counts on process time (decideInMemory).
		return l.store.(Refunder).Refund(ctx, Request{Subject: subject, Rates: rates, Now: time.Unix(0, pAt)})
	}
	store := l.store
	if l.open.Load() {
		store = l.local
	}
	r, ok := store.(Refunder)
	if !ok {
		return nil
	}
	req := Request{Subject: subject, Rates: rates, Now: at}
	if err := r.Refund(ctx, req); err != nil || store == l.local {
		return err
	}
	// The mirror learns of the room at once, so that Refusing stops; the
	// refund is made, whatever ctx does now.
	return l.local.refund(context.WithoutCancel(ctx), req, false)
}

// Refund implements Refunder.
func (s *MemoryStore) Refund(ctx context.Context, req Request) error {
	return s.refund(ctx, req, true)
}

// refund is Refund; with debts false, as in the mirror of a shared store
// that took the refund itself, it leaves what this process admitted on its
// own (memWindow.local, debts yet to be told) as it is.
func (s *MemoryStore) refund(ctx context.Context, req Request, debts bool) error {
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
	at := req.Now.UnixNano()
	for i := range e.windows {
		w := &e.windows[i]
		for _, r := range req.Rates {
			if w.period == r.Period && w.end > at && w.end-int64(w.period) <= at && w.used > 0 {
				w.used--
				if debts {
					w.local = max(w.local-1, 0)
				}
				// A window the refund leaves room in refuses no more.
				w.full = w.used >= r.Quota
			}
		}
	}
	return nil
}
