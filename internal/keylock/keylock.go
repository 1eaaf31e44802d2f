// Package keylock serialises work per key (a project id, say) with a
// fixed set of mutexes, so that a count-then-create under a cap cannot
// be passed by two callers racing on the same key, without a map of
// locks that grows with the keys. Two keys may share a mutex: they then
// take turns needlessly, never wrongly.
package keylock

import (
	"hash/maphash"
	"sync"
)

// Locks is 64 mutexes, picked by a hash of the key. The zero value is
// ready to use; a Locks must not be copied after first use.
type Locks struct {
	seed  maphash.Seed
	once  sync.Once
	locks [64]sync.Mutex
}

// Lock locks key's mutex and returns the function that unlocks it.
func (l *Locks) Lock(key string) (unlock func()) {
	l.once.Do(func() { l.seed = maphash.MakeSeed() })
	m := &l.locks[maphash.String(l.seed, key)%uint64(len(l.locks))]
	m.Lock()
	return m.Unlock
}
