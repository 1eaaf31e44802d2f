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
// in memory. Past it, claiming a new key forgets the oldest record first,
// so a flood of keys costs bounded memory; a retry of a forgotten key runs
// as a new request. Records are otherwise kept for petstore.IdempotencyTTL.
const MaxIdempotencyRecords = 100_000

// idemTable holds one store's Idempotency-Key records, and the order they
// were claimed in for forgetting the oldest at the cap.
type idemTable struct {
	mu    sync.Mutex
	recs  map[idemID]petstore.IdempotencyRecord
	order []idemID // claim order; may hold ids deleted since
	head  int      // order[:head] is already forgotten
	max   int
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

type idemID struct{ scope, key string }

// copyRecord returns rec with its own copy of Body, so neither the caller
// nor the store can change the other's bytes.
func copyRecord(rec petstore.IdempotencyRecord) petstore.IdempotencyRecord {
	rec.Body = slices.Clone(rec.Body)
	return rec
}

// ClaimIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord) (petstore.IdempotencyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return petstore.IdempotencyRecord{}, false, err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	id := idemID{rec.Scope, rec.Key}
	if old, ok := t.recs[id]; ok {
		return copyRecord(old), false, nil
	}
	rec.Completed, rec.Status, rec.ContentType, rec.Location, rec.Body = false, 0, "", "", nil
	t.recs[id] = rec
	t.remember(id)
	return rec, true, nil
}

// TakeOverIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) TakeOverIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord, staleBefore time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	id := idemID{rec.Scope, rec.Key}
	old, ok := t.recs[id]
	if !ok || old.Completed || !old.CreatedAt.Before(staleBefore) {
		return false, nil
	}
	rec.Completed, rec.Status, rec.ContentType, rec.Location, rec.Body = false, 0, "", "", nil
	t.recs[id] = rec
	return true, nil
}

// CompleteIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	id := idemID{rec.Scope, rec.Key}
	old, ok := t.recs[id]
	if !ok {
		return petstore.Errorf(petstore.CodeNotFound, "idempotency key not found")
	}
	old.Completed = true
	old.Status, old.ContentType, old.Location, old.Body = rec.Status, rec.ContentType, rec.Location, slices.Clone(rec.Body)
	t.recs[id] = old
	return nil
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

// ReleaseIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := s.idemRecs
	t.mu.Lock()
	defer t.mu.Unlock()
	id := idemID{scope, key}
	if rec, ok := t.recs[id]; ok && !rec.Completed {
		delete(t.recs, id)
	}
	return nil
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
	return n, nil
}
