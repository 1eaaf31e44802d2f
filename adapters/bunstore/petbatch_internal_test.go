package bunstore

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/petstorekit/petstore"
)

// TestPetBatchesReadLaterArrivalsTogether: fetches arriving while a fetch
// is being read are read by one query for all their ids, which starts
// after the first query ended; a missing pet is not_found.
func TestPetBatchesReadLaterArrivalsTogether(t *testing.T) {
	var b petBatches
	var mu sync.Mutex
	var queries [][]int64
	gates := make(chan chan struct{}, 2)
	first, second := make(chan struct{}), make(chan struct{})
	gates <- first
	gates <- second
	read := func(ctx context.Context, ids []int64) (map[int64]petstore.Pet, error) {
		gate := <-gates
		mu.Lock()
		queries = append(queries, slices.Clone(ids))
		mu.Unlock()
		<-gate
		pets := map[int64]petstore.Pet{}
		for _, id := range ids {
			if id != 404 {
				pets[id] = petstore.Pet{ID: id, Name: "pet"}
			}
		}
		return pets, nil
	}
	one := func(context.Context) (petstore.Pet, error) {
		t.Error("a fetch read alone")
		return petstore.Pet{}, nil
	}
	ctx := context.Background()
	type res struct {
		p   petstore.Pet
		err error
	}
	fetch := func(id int64) chan res {
		c := make(chan res, 1)
		go func() { p, err := b.get(ctx, id, read, one); c <- res{p, err} }()
		return c
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		waitUntil(t, &b.mu, what, cond)
	}
	r1 := fetch(1)
	waitFor("the first fetch running", func() bool { return b.running != nil })
	r2, r3, r404 := fetch(2), fetch(3), fetch(404)
	waitFor("three fetches on the next batch", func() bool { return b.next != nil && len(b.next.ids) == 3 })
	close(first)
	if r := <-r1; r.err != nil || r.p.ID != 1 {
		t.Fatalf("fetch 1: %+v", r)
	}
	close(second)
	for id, c := range map[int64]chan res{2: r2, 3: r3} {
		if r := <-c; r.err != nil || r.p.ID != id {
			t.Fatalf("fetch %d: %+v", id, r)
		}
	}
	if r := <-r404; petstore.ErrorCode(r.err) != petstore.CodeNotFound {
		t.Fatalf("fetch of a missing pet: %+v, want not_found", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) != 2 || !slices.Equal(queries[0], []int64{1}) || len(queries[1]) != 3 {
		t.Fatalf("queries %v, want [1] then the three later ids together", queries)
	}
	waitFor("nothing left in flight", func() bool { return b.running == nil && b.next == nil })
}
