package petstore

import (
	"context"
	"time"
)

// IdempotencyTTL is how long a stored response answers a repeated
// Idempotency-Key: 24 hours, as in Stripe's model. Older records are
// purged and the key may be used again.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyLease is how long a claimed Idempotency-Key may stay in
// flight before a repeat may take it over: a request still unanswered after
// two minutes has died with its process (servers time requests out well
// before that), and its client's retry must not wait for the 24-hour purge.
const IdempotencyLease = 2 * time.Minute

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

// IdempotencyRecord is one claimed Idempotency-Key and, once the first
// request finished, the response to replay for it. Its fields map to
// plain columns so an SQL store keeps it in one row keyed by (Scope, Key).
type IdempotencyRecord struct {
	Scope       string    // whose key it is: the API key's id, so clients never collide
	Key         string    // the Idempotency-Key header value
	RequestHash string    // hex SHA-256 of the request; a different body under one key is refused
	CreatedAt   time.Time // when the first request claimed the key; purged IdempotencyTTL later
	Completed   bool      // false while the first request is still in flight

	// The response of the first request, set by CompleteIdempotencyKey.
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// IdempotencyStore keeps Idempotency-Key records for idempotent POST
// /pets. The operations are those an SQL table with a primary key on
// (scope, key) does in one statement each. Implementations must be safe for
// concurrent use across processes sharing the store, honour context
// cancellation, and keep CreatedAt to at least millisecond precision.
// storetest checks all of this.
type IdempotencyStore interface {
	// ClaimIdempotencyKey stores rec as in flight when no record exists
	// for (rec.Scope, rec.Key) and returns it with claimed true. When one
	// exists it changes nothing and returns the stored record with claimed
	// false. Of any number of concurrent claims of one key exactly one
	// wins (insert-if-absent).
	ClaimIdempotencyKey(ctx context.Context, rec IdempotencyRecord) (stored IdempotencyRecord, claimed bool, err error)

	// TakeOverIdempotencyKey replaces the record (rec.Scope, rec.Key)
	// with rec, in flight, if that record is still in flight and was
	// claimed (CreatedAt) before staleBefore: the request that claimed it
	// died without an answer and its lease has run out. It reports whether
	// it did. A completed, younger or missing record is left alone (false,
	// nil). Of any number of concurrent takeovers of one record exactly
	// one wins (a conditional update).
	TakeOverIdempotencyKey(ctx context.Context, rec IdempotencyRecord, staleBefore time.Time) (bool, error)

	// CompleteIdempotencyKey stores the response fields of rec (Status,
	// ContentType, Location, Body) on the record (rec.Scope, rec.Key) and
	// marks it completed. Returns not_found if no such record exists.
	CompleteIdempotencyKey(ctx context.Context, rec IdempotencyRecord) error

	// GetIdempotencyKey returns the record (scope, key), or not_found.
	GetIdempotencyKey(ctx context.Context, scope, key string) (IdempotencyRecord, error)

	// ReleaseIdempotencyKey deletes the record (scope, key) if it is still
	// in flight, so a request that failed without an answer worth keeping
	// (a 5xx) may be retried. A completed or missing record is left alone
	// and is not an error.
	ReleaseIdempotencyKey(ctx context.Context, scope, key string) error

	// PurgeIdempotencyKeys deletes every record created before before,
	// completed or not, and returns how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}
