package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
)

var _ petstore.IdempotencyStore = (*Store)(nil)

// MaxIdempotencyRecords bounds the Idempotency-Key records a Store keeps
// in memory. Past it, storing a new record forgets the oldest record first,
// so a flood of keys costs bounded memory; a retry of a forgotten key runs
// as a new request. Records are otherwise kept for petstore.IdempotencyTTL.
const MaxIdempotencyRecords = 100_000

// idemTable holds one store's Idempotency-Key records, and the order they
// were claimed in for forgetting the oldest at the cap.
type idemTable struct {
	mu   sync.Mutex
	recs map[idemID]petstore.IdempotencyRecord
	// running holds the keys whose create is under way, each with a
	// channel closed when it ends.
	running map[idemID]chan struct{}
	order   []idemID // claim order; may hold ids deleted since
	head    int      // order[:head] is already forgotten
	max     int
}

// remember records a fresh claim of id, forgetting the oldest records
// while the table is over its cap. t.mu is held.
func (t *idemTable) remember(id idemID) {
	t.order = append(t.order, id)
	for len(t.recs) > t.max && t.head < len(t.order) {
		delete(t.recs, t.order[t.head])
		t.head++
	}
	if t.head > len(t.order)/2 && t.head > 1024 {
		// Keep only what is still queued, so the slice does not grow for ever.
		t.order = append(t.order[:0:0], t.order[t.head:]...)
		t.head = 0
	}
}

// forget deletes the record of id, and its place in the claim order, so
// that a later claim of id is queued by itself alone. t.mu is held.
func (t *idemTable) forget(id idemID) {
	delete(t.recs, id)
	if i := slices.Index(t.order[t.head:], id); i >= 0 {
		t.order = slices.Delete(t.order, t.head+i, t.head+i+1)
	}
}

type idemID struct{ scope, key string }

// copyRecord returns rec with its own copy of Body, so neither the caller
// nor the store can change the other's bytes.
func copyRecord(rec petstore.IdempotencyRecord) petstore.IdempotencyRecord {
	rec.Body = slices.Clone(rec.Body)
	return rec
}

// CreateOnce implements petstore.IdempotencyStore. A call finding the key
// running in another call waits for it; one finding its record expired
// forgets it and runs. The pets and orders create makes
// through ctx are taken back if its response is not kept.
func (s *Store) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	if err := rec.CheckStorable(); err != nil {
		return petstore.IdempotencyRecord{}, false, err
	}
	t := s.idemRecs
	id := idemID{rec.Scope, rec.Key}
	for {
		if err := ctx.Err(); err != nil {
			return petstore.IdempotencyRecord{}, false, err
		}
		t.mu.Lock()
		if old, ok := t.recs[id]; ok {
			if !old.Expired(rec.CreatedAt) {
				t.mu.Unlock()
				return copyRecord(old), false, nil
			}
			t.forget(id)
		}
		running, busy := t.running[id]
		if !busy {
			break // t.mu still held
		}
		t.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return petstore.IdempotencyRecord{}, false, ctx.Err()
		}
	}
	done := make(chan struct{})
	t.running[id] = done
	t.mu.Unlock()

	u := &unit{store: s}
	out, keep := petstore.IdempotencyRecord{}, false
	defer func() {
		if !keep {
			u.undo()
		}
		t.mu.Lock()
		delete(t.running, id)
		if keep {
			out.Completed = true
			t.recs[id] = copyRecord(out)
			t.remember(id)
		}
		t.mu.Unlock()
		close(done)
	}()
	out, keep = create(context.WithValue(ctx, unitKey{}, u))
	if keep {
		if err := out.CheckStorable(); err != nil {
			keep = false // taken back, as a response not kept is
			return petstore.IdempotencyRecord{}, true, err
		}
	}
	return out, true, nil
}

// unit is one CreateOnce call's creations, to take back when its response
// is not kept.
type unit struct {
	store  *Store
	mu     sync.Mutex
	pets   []int64
	orders []int64
}

type unitKey struct{}

// unitOf returns the CreateOnce call of s that ctx runs in, or nil.
func (s *Store) unitOf(ctx context.Context) *unit {
	if u, ok := ctx.Value(unitKey{}).(*unit); ok && u.store == s {
		return u
	}
	return nil
}

// undo deletes the unit's pets and orders.
func (u *unit) undo() {
	u.mu.Lock()
	pets, orders := u.pets, u.orders
	u.pets, u.orders = nil, nil
	u.mu.Unlock()
	s := u.store
	s.mu.Lock()
	for _, id := range pets {
		if i, ok := s.find(id); ok {
			s.pets = slices.Delete(s.pets, i, i+1)
		}
	}
	s.mu.Unlock()
	if len(orders) > 0 {
		t := s.orders
		t.mu.Lock()
		t.orders = slices.DeleteFunc(t.orders, func(o storedOrder) bool { return slices.Contains(orders, o.order.ID) })
		t.mu.Unlock()
	}
}

// GetIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) GetIdempotencyKey(ctx context.Context, scope, key string) (petstore.IdempotencyRecord, error) {
	if err := ctx.Err(); err != nil {
		return petstore.IdempotencyRecord{}, err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, ok := t.recs[idemID{scope, key}]
	if !ok {
		return petstore.IdempotencyRecord{}, petstore.Errorf(petstore.CodeNotFound, "idempotency key not found")
	}
	return copyRecord(rec), nil
}

// PurgeIdempotencyKeys implements petstore.IdempotencyStore.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for id, rec := range t.recs {
		if rec.CreatedAt.Before(before) {
			delete(t.recs, id)
			n++
		}
	}
	if n > 0 {
		// The claim order keeps only the records left, so a key used
		// again later is queued by its new claim alone.
		kept := make([]idemID, 0, len(t.recs))
		for _, id := range t.order[t.head:] {
			if _, ok := t.recs[id]; ok {
				kept = append(kept, id)
			}
		}
		t.order, t.head = kept, 0
	}
	return n, nil
}
