package ratelimit

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// TestLockNeverReturnsAnEvictedLease: a request that looked its subject's
// lease up just before another subject's lookup evicted it must not put a
// share into the evicted lease, where no settle, Close or later request
// would find it (the quota would be held hostage until the window ends).
func TestLockNeverReturnsAnEvictedLease(t *testing.T) {
	tab := newLeaseTable(memShards) // one lease per shard
	stale := tab.get("a", 0)        // looked up, not yet locked
	shard := maphash.String(tab.seed, "a") % memShards
	other := ""
	for i := 0; other == ""; i++ {
		if s := fmt.Sprint("b", i); maphash.String(tab.seed, s)%memShards == shard {
			other = s
		}
	}
	tab.get(other, 0) // the shard is full and "a" holds nothing: evicted
	if tab.peek("a") != nil {
		t.Fatal(`"a" was not evicted: the test proves nothing`)
	}
	e := tab.lock("a", 0)
	defer e.mu.Unlock()
	if e == stale {
		t.Fatal("lock returned the evicted lease")
	}
	if tab.peek("a") != e {
		t.Fatal("lock returned a lease that is not in the table")
	}
}
