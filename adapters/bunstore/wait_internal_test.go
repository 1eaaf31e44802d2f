package bunstore

import (
	"runtime"
	"sync"
	"testing"
)

// waitUntil waits, yielding, until cond holds with mu held: for a state
// of the store's coordination (a look, a flight, a batch) that a test
// needs reached before its next step. It fails t if that never happens.
func waitUntil(t *testing.T, mu sync.Locker, what string, cond func() bool) {
	t.Helper()
	for i := 0; ; i++ {
		mu.Lock()
		ok := cond()
		mu.Unlock()
		if ok {
			return
		}
		if i == 1_000_000 {
			t.Fatalf("never saw %s", what)
		}
		runtime.Gosched()
	}
}
