package bunstore

import (
	"context"
	"errors"
	"sync"

	"github.com/petstorekit/petstore"
)

// On PostgreSQL, fetches of single pets go one step further than
// flights.go: the fetches that arrive while a fetch is being read, of any
// pets, are read together by the next query (WHERE id = ANY($1)), which
// starts after every one of them arrived. As with shared pages, no answer
// is older than its request; a fetch arriving when nothing is in flight
// runs at once.

// maxPetBatch bounds the ids one query reads; a fetch arriving when the
// next batch is full reads alone.
const maxPetBatch = 256

// petBatches is the fetch under way and the batch that follows it.
type petBatches struct {
	mu      sync.Mutex
	running *petBatch
	next    *petBatch
}

// petBatch is one query for the pets of the fetches waiting on it.
type petBatch struct {
	done chan struct{} // closed when pets and err are set
	ids  []int64       // appended to until the batch runs; under petBatches.mu
	pets map[int64]petstore.Pet
	err  error
}

// get returns pet id as read by a query that started after get was
// called, shared with other fetches when they arrived together. read
// reads the pets of ids (missing ones are absent from the map).
func (b *petBatches) get(ctx context.Context, id int64, read func(context.Context, []int64) (map[int64]petstore.Pet, error), one func(context.Context) (petstore.Pet, error)) (petstore.Pet, error) {
	b.mu.Lock()
	if b.running == nil {
		bt := &petBatch{done: make(chan struct{}), ids: []int64{id}}
		b.running = bt
		b.mu.Unlock()
		b.run(ctx, bt, read)
		return bt.result(id)
	}
	bt, lead := b.next, false
	switch {
	case bt == nil:
		bt, lead = &petBatch{done: make(chan struct{}), ids: []int64{id}}, true
		b.next = bt
	case len(bt.ids) >= maxPetBatch:
		b.mu.Unlock()
		return one(ctx)
	default:
		bt.ids = append(bt.ids, id)
	}
	prev := b.running
	b.mu.Unlock()
	if lead {
		// As in flights.do: run the batch once the one under way ends,
		// or, if ctx ends first, leave it to fail at once and hand on.
		select {
		case <-prev.done:
			b.run(ctx, bt, read)
			return bt.result(id)
		case <-ctx.Done():
			go func() {
				<-prev.done
				b.run(ctx, bt, read)
			}()
			return petstore.Pet{}, ctx.Err()
		}
	}
	select {
	case <-bt.done:
		if bt.err != nil && ctx.Err() == nil &&
			(errors.Is(bt.err, context.Canceled) || errors.Is(bt.err, context.DeadlineExceeded)) {
			return one(ctx) // the runner's context ended, not this fetch's
		}
		return bt.result(id)
	case <-ctx.Done():
		return petstore.Pet{}, ctx.Err()
	}
}

// run reads bt, then hands the running slot to the next batch.
func (b *petBatches) run(ctx context.Context, bt *petBatch, read func(context.Context, []int64) (map[int64]petstore.Pet, error)) {
	bt.pets, bt.err = read(ctx, bt.ids)
	b.mu.Lock()
	b.running, b.next = b.next, nil
	b.mu.Unlock()
	close(bt.done)
}

// result is pet id's answer from bt.
func (bt *petBatch) result(id int64) (petstore.Pet, error) {
	if bt.err != nil {
		return petstore.Pet{}, bt.err
	}
	p, ok := bt.pets[id]
	if !ok {
		return petstore.Pet{}, petstore.PetNotFound(id)
	}
	return p, nil
}
