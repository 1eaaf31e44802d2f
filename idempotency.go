package petstore

import (
	"context"
	"time"
)

// IdempotencyTTL is how long a stored response answers a repeated
// Idempotency-Key: 24 hours, as in Stripe's model. Older records are
// purged and the key may be used again.
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted, in bytes.
const MaxIdempotencyKeyLength = 255

// ValidIdempotencyKey reports whether key is 1..255 printable ASCII
// characters (space to tilde), the form httpx accepts. Anything else is
// answered with invalid_request.
func ValidIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > MaxIdempotencyKeyLength {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// IdempotencyRecord is one Idempotency-Key and the response to replay
// for it. Its fields map to plain columns so an SQL store keeps it in one
// row keyed by (Scope, Key).
type IdempotencyRecord struct {
	Scope       string    // whose key it is: the API key's id, so clients never collide
	Key         string    // the Idempotency-Key header value
	RequestHash string    // hex SHA-256 of the request; a different body under one key is refused
	CreatedAt   time.Time // when the first request ran; purged IdempotencyTTL later
	// Completed is true on every record CreateOnce stores. A record stored
	// without a response (by a version before CreateOnce, whose requests
	// claimed keys first) is false: its request may still be running.
	Completed bool

	// The response of the first request, as its create returned it.
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// Expired reports whether r is past IdempotencyTTL at now: created more
// than IdempotencyTTL before it. An expired record answers no more; its
// key may be used again.
func (r IdempotencyRecord) Expired(now time.Time) bool {
	return now.Sub(r.CreatedAt) > IdempotencyTTL
}

// IdempotencyStore keeps Idempotency-Key records and makes each key
// create once (POST /pets, POST /store/orders). Implementations must be
// safe for concurrent use across processes sharing the store, honour
// context cancellation, and keep CreatedAt to at least millisecond
// precision. storetest checks all of this.
type IdempotencyStore interface {
	// CreateOnce runs create once per (rec.Scope, rec.Key).
	//
	// When the store holds no record for the key, or one Expired at
	// rec.CreatedAt, it calls create with a context in which the store's
	// own creations (CreatePet, CreateOrder) join one transaction with the
	// record. create returns rec with its response fields set, and
	// whether to keep it: if so, the store writes that record and
	// create's creations together, atomically (a retry finds both or
	// neither); if not (the response was a 5xx), nothing of either is
	// written. CreateOnce then returns create's record and ran true. The
	// expired record is gone either way, and no other record is touched:
	// other expired ones wait for PurgeIdempotencyKeys.
	//
	// When a record that has not expired exists, or a concurrent call
	// with the same key stores one while this call waits for it, create
	// is not called and the stored record is returned with ran false. Two
	// calls with one key never both run create to a kept record.
	//
	// An error means nothing is known to have been written: the store
	// could not be reached, ctx ended, or the commit's outcome is unknown
	// (its reply was lost). The store then never holds the key longer
	// than ctx's deadline plus that long again: a retry afterwards finds
	// the record, if the commit landed, or runs.
	CreateOnce(ctx context.Context, rec IdempotencyRecord, create func(ctx context.Context) (IdempotencyRecord, bool)) (stored IdempotencyRecord, ran bool, err error)

	// GetIdempotencyKey returns the record (scope, key), or not_found.
	GetIdempotencyKey(ctx context.Context, scope, key string) (IdempotencyRecord, error)

	// PurgeIdempotencyKeys deletes every record created before before
	// and returns how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}
