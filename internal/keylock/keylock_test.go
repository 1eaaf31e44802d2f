package keylock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/keylock"
)

// TestLockSerialisesOneKey: a count-then-add under a cap, run by many
// goroutines on one key with a pause between the count and the add, never
// passes the cap; without the lock, most of them count below it at once.
func TestLockSerialisesOneKey(t *testing.T) {
	var l keylock.Locks
	var mu sync.Mutex // guards n only; the count and the add are apart
	n := 0
	count := func() int { mu.Lock(); defer mu.Unlock(); return n }
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			defer l.Lock("prj_a")()
			if count() < 3 {
				time.Sleep(time.Millisecond) // a store's round trip
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n != 3 {
		t.Fatalf("%d added under a cap of 3", n)
	}
}
