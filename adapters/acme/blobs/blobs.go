// Package blobs is the storage port of adapters/acme: small binary values
// by key and named locks, which the certificate layer keeps in the
// platform's own database (memstore and bunstore implement it), so that
// every process sharing the database shares one certificate per name. It
// lives next to its one consumer and imports nothing heavier than the
// standard library, so a store can implement it without pulling in the
// ACME client.
package blobs

import (
	"context"
	"time"
)

// Info describes one stored blob.
type Info struct {
	Key      string
	Size     int64     // length of the value in bytes
	Modified time.Time // when the value was last put, by the store's clock
}

// NotFoundMessage is the message of the not_found error (a
// petstore.Error) that GetBlob returns for a key that holds no value, the
// same from every store. It names no key: adapters/acme turns the error
// into fs.ErrNotExist, and its caller knows the key it asked for.
const NotFoundMessage = "blob not found"

// Store keeps small binary values by key, plus named locks with an
// owner and an expiry. Certificates, their keys and ACME account data live
// here (adapters/acme turns it into certmagic's Storage), so that every
// process sharing one database shares one certificate per name, and a
// removal reaches all of them.
//
// Keys are opaque, non-empty strings; callers use "/" to build
// hierarchies, but the store gives "/" no meaning except in DeleteBlob.
// Lock names are a namespace of their own, separate from keys. PutBlob
// with an empty key, and TryLock with an empty name or owner, return
// invalid_request and store nothing.
//
// Implementations must be safe for concurrent use, across processes when
// the backend is shared, and honour context cancellation. storetest.RunBlobs
// checks all of this.
type Store interface {
	// PutBlob stores value under key, replacing any value stored there,
	// and sets its modification time to now.
	PutBlob(ctx context.Context, key string, value []byte) error

	// GetBlob returns the value stored under key and its info.
	// Returns not_found, with NotFoundMessage, if key holds no value.
	GetBlob(ctx context.Context, key string) ([]byte, Info, error)

	// DeleteBlob deletes key and every key that starts with key+"/", so a
	// whole hierarchy goes at once. Deleting what does not exist is not an
	// error.
	DeleteBlob(ctx context.Context, key string) error

	// ListBlobs returns the info of every key that starts with prefix (a
	// plain string prefix; "" lists everything), in ascending byte order
	// of keys. It never returns nil.
	ListBlobs(ctx context.Context, prefix string) ([]Info, error)

	// TryLock takes the lock name for owner until expires and reports
	// whether it did. It succeeds when nobody holds the lock, when the
	// holder's expiry is not after now (a stale lock of a crashed process
	// is taken over), or when owner already holds it, which moves its
	// expiry to expires. now and expires come from the caller's clock, so
	// that expiry can be tested without sleeping. A store that processes
	// share should judge expiry on a clock of its own, as bunstore does
	// with the database's (unless bunstore.CallerClock): the lock then
	// lasts expires.Sub(now) from the store's now, whatever the callers'
	// clocks say, and storetest.RunBlobs checks it with its caller-clock
	// option.
	TryLock(ctx context.Context, name, owner string, now, expires time.Time) (bool, error)

	// Unlock releases the lock name if owner holds it. Releasing a lock
	// that owner does not hold (never taken, expired and taken over, or
	// released already) is not an error and changes nothing.
	Unlock(ctx context.Context, name, owner string) error
}
