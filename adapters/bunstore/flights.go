package bunstore

import (
	"context"
	"errors"
	"sync"
)

// On PostgreSQL and MySQL, identical reads of the request path (the same
// page, the same pet) that arrive while one is being read share the next
// read of it, rather than each sending its own query: a read takes the
// result of a query that started after the read arrived, never of one
// already under way, which might miss a commit the read must see. So no
// answer is older than its request, exactly as without sharing, and a
// created pet is in the very next page. When nothing identical is in
// flight, a read runs its query at once, as before; under load, a page
// that many clients ask for costs one query per round trip to the
// database instead of one per client. SQLite's reads have readcache.go
// instead.

// flights shares runs of a read among the reads of the same key.
type flights[K comparable, V any] struct {
	mu    sync.Mutex
	slots map[K]*flightSlot[V]
}

// flightSlot is one key's run under way and the run that follows it.
type flightSlot[V any] struct{ running, next *flight[V] }

// flight is one run of a read, shared by the reads waiting for it.
type flight[V any] struct {
	done   chan struct{} // closed when v and err are set
	v      V
	err    error
	joined int // reads waiting for it besides the one running it; under flights.mu
}

// do returns the result of a run of read for k that started after do was
// called: its own, or a shared one. shared reports the latter. Either may
// be read by other callers, its own too (the reads that joined it): a
// value must not be modified.
func (f *flights[K, V]) do(ctx context.Context, k K, read func(context.Context) (V, error)) (v V, shared bool, err error) {
	f.mu.Lock()
	if f.slots == nil {
		f.slots = map[K]*flightSlot[V]{}
	}
	s := f.slots[k]
	if s == nil {
		s = &flightSlot[V]{}
		f.slots[k] = s
	}
	if s.running == nil {
		fl := &flight[V]{done: make(chan struct{})}
		s.running = fl
		f.mu.Unlock()
		f.run(ctx, k, s, fl, read)
		return fl.v, false, fl.err
	}
	fl, lead := s.next, false
	if fl == nil {
		fl, lead = &flight[V]{done: make(chan struct{})}, true
		s.next = fl
	} else {
		fl.joined++
	}
	prev := s.running
	f.mu.Unlock()
	if lead {
		// Once the run under way ends, fl is running (see run), and this
		// read runs it for everyone on it. If ctx ends first, fl still
		// has to run and hand the slot on: it then fails at once, and the
		// reads on it run their own.
		select {
		case <-prev.done:
			f.run(ctx, k, s, fl, read)
			return fl.v, false, fl.err
		case <-ctx.Done():
			go func() {
				<-prev.done
				f.run(ctx, k, s, fl, read)
			}()
			return v, false, ctx.Err()
		}
	}
	select {
	case <-fl.done:
		if fl.err != nil && ctx.Err() == nil &&
			(errors.Is(fl.err, context.Canceled) || errors.Is(fl.err, context.DeadlineExceeded)) {
			// The runner's context ended, not this read's.
			v, err = read(ctx)
			return v, false, err
		}
		return fl.v, true, fl.err
	case <-ctx.Done():
		return v, false, ctx.Err()
	}
}

// run runs read for fl, then hands the key's slot to the next run, or
// frees it.
func (f *flights[K, V]) run(ctx context.Context, k K, s *flightSlot[V], fl *flight[V], read func(context.Context) (V, error)) {
	fl.v, fl.err = read(ctx)
	f.mu.Lock()
	s.running, s.next = s.next, nil
	if s.running == nil {
		delete(f.slots, k)
	}
	f.mu.Unlock()
	close(fl.done)
}
