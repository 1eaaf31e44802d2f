package httpx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/statuswriter"
)

// idempotencyPurgeEvery is how often expired Idempotency-Key records are
// purged, by the request that notices. Once an hour keeps the table at
// about a day of keys without a background goroutine.
const idempotencyPurgeEvery = time.Hour

// idempotent makes POST /pets safe to retry (the IETF httpapi
// Idempotency-Key draft, Stripe's model). A request without the header
// passes through. With it, the first request claims the key in the store,
// runs, and its response is stored; a repeat with the same key and body
// within 24 hours gets that response again with Idempotent-Replayed: true,
// a repeat with another body is 422 idempotency_key_reused, and a repeat
// while the first is still running is 409 idempotency_key_in_use. Keys are
// scoped to the API key, so two clients never see each other's responses.
//
// A 5xx answer is not stored: the key is released so the client's retry
// runs again. A process that dies mid-request leaves its key in flight;
// once the claim is older than the lease (petstore.IdempotencyLease), a
// repeat takes it over and runs, so the key is not locked until the purge.
// If the response cannot be stored after it was sent, the key also stays
// in flight for the lease to decide: releasing it would let a retry create
// a second pet.
//
// Two bodies are the same request when they decode to the same NewPet:
// the wrapper is handed the NewPet the operation will create, decoded once
// by decodeNewPet, and hashes that. So a retry that re-serializes its JSON
// (other whitespace or field order, unknown fields moved or dropped) is
// replayed, and two bodies that create different pets never share a hash.
// A body that does not decode is refused (400) before any key is claimed:
// nothing ran, so there is nothing to replay, and its retry is refused the
// same way.
type idempotent[T any] struct {
	store     petstore.IdempotencyStore
	now       func() time.Time
	next      decodedHandler[T]
	lease     time.Duration
	lastPurge atomic.Int64 // unix nanoseconds of the last purge
	retrying  atomic.Int64 // releases being retried in the background
}

// maxReleaseRetries bounds the releases retried at once: past it a key
// waits for its lease, as it would if this process had died.
const maxReleaseRetries = 1024

func newIdempotent[T any](store petstore.IdempotencyStore, now func() time.Time, next decodedHandler[T]) *idempotent[T] {
	if now == nil {
		now = time.Now
	}
	return &idempotent[T]{store: store, now: now, next: next, lease: petstore.IdempotencyLease}
}

// requestHash is the hex SHA-256 of a creation: method, path and the
// decoded body (a NewPet, or a NewOrder with its defaults applied) in
// canonical form (json.Marshal of the struct: fixed field order, no
// whitespace, empty optional fields omitted). Equal bodies hash equally
// and, since the encoding of a valid UTF-8 string is injective, different
// ones never do (FuzzRequestHash checks both).
func requestHash(method, path string, v any) string {
	sum := sha256.New()
	io.WriteString(sum, method+" "+path+"\n")
	canon, _ := json.Marshal(v) // a NewPet or a NewOrder: plain fields, cannot fail
	sum.Write(canon)
	return hex.EncodeToString(sum.Sum(nil))
}

// serveNewPet runs a decoded POST /pets with Idempotency-Key replay.
func (m *idempotent[T]) serve(w http.ResponseWriter, r *http.Request, v T) {
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		m.next.serve(w, r, v)
		return
	}
	if len(vals) > 1 || !petstore.ValidIdempotencyKey(vals[0]) {
		WriteError(w, r, petstore.Errorf(petstore.CodeInvalidRequest, "Idempotency-Key must be sent once, as 1 to 255 printable ASCII characters"))
		return
	}
	ctx := r.Context()
	key, _ := KeyFromContext(ctx)

	now := m.now().UTC()
	m.purge(ctx, now)
	rec := petstore.IdempotencyRecord{Scope: key.ID, Key: vals[0], RequestHash: requestHash(r.Method, r.URL.Path, v), CreatedAt: now}
	stored, claimed, err := m.store.ClaimIdempotencyKey(ctx, rec)
	if err == nil && !claimed && now.Sub(stored.CreatedAt) > petstore.IdempotencyTTL {
		// Expired but not purged yet: purge now and claim afresh.
		if _, err = m.store.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL)); err == nil {
			stored, claimed, err = m.store.ClaimIdempotencyKey(ctx, rec)
		}
	}
	if err == nil && !claimed && !stored.Completed && stored.RequestHash == rec.RequestHash && now.Sub(stored.CreatedAt) > m.lease {
		// The first request's process died: its lease is over. Of the
		// retries that notice, the store lets exactly one take over.
		claimed, err = m.store.TakeOverIdempotencyKey(ctx, rec, now.Add(-m.lease))
	}
	switch {
	case err != nil:
		WriteError(w, r, err)
		return
	case !claimed && stored.RequestHash != rec.RequestHash:
		WriteError(w, r, petstore.Errorf(petstore.CodeIdempotencyKeyReused, "this Idempotency-Key was used with a different request; use a new key for a new request"))
		return
	case !claimed && !stored.Completed:
		w.Header().Set("Retry-After", "1")
		WriteError(w, r, petstore.Errorf(petstore.CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still being processed; retry later"))
		return
	case !claimed:
		replay(w, stored)
		return
	}

	// The claim is ours. Whatever happens below, the key must not stay in
	// flight, and the store must be told even if the client has gone.
	bg := context.WithoutCancel(ctx)
	done := false
	defer func() {
		if !done {
			m.release(bg, rec.Scope, rec.Key, now)
		}
	}()
	cw := &captureWriter{Writer: statuswriter.Writer{ResponseWriter: w}}
	m.next.serve(cw, r, v)
	if cw.Status == 0 || cw.Status >= 500 {
		return // released by the deferred call: the retry runs again
	}
	rec.Status = cw.Status
	rec.ContentType = cw.Header().Get("Content-Type")
	rec.Location = cw.Header().Get("Location")
	rec.Body = cw.body.Bytes()
	// The response has been sent: whatever the store says now, the key
	// must not be released, or a retry would create the pet again. If it
	// cannot be completed, it stays in flight (409 to retries) until its
	// lease ends and a retry takes it over.
	done = true
	if err := m.store.CompleteIdempotencyKey(bg, rec); err != nil {
		if info := stateOf(ctx); info != nil {
			info.logger.Error("storing the Idempotency-Key response; the key stays in flight until its lease ends",
				"request_id", info.id, "lease", m.lease, "error", err)
		}
	}
}

// release gives up a claim whose request wrote nothing, so that the
// client's retry runs again. When the store cannot be reached (the outage
// that failed the request usually fails the release too), it is retried
// in the background with backoff until it succeeds or half the claim's
// lease has passed, so the key is retryable as soon as the store is back
// rather than 409 for the whole lease. Half, because after the lease a
// retry may take the claim over, and a late release must never delete
// that newer claim, whatever the skew between two processes' clocks.
func (m *idempotent[T]) release(ctx context.Context, scope, key string, claimedAt time.Time) {
	if m.store.ReleaseIdempotencyKey(ctx, scope, key) == nil {
		return
	}
	if m.retrying.Add(1) > maxReleaseRetries {
		m.retrying.Add(-1)
		return
	}
	go func() {
		defer m.retrying.Add(-1)
		wait := 50 * time.Millisecond
		for m.now().Before(claimedAt.Add(m.lease / 2)) {
			time.Sleep(wait)
			if m.store.ReleaseIdempotencyKey(ctx, scope, key) == nil {
				return
			}
			wait = min(2*wait, time.Second)
		}
	}()
}

// purge deletes expired records at most once per idempotencyPurgeEvery.
// A failed purge is retried by the next period's first request.
func (m *idempotent[T]) purge(ctx context.Context, now time.Time) {
	last := m.lastPurge.Load()
	if now.UnixNano()-last < int64(idempotencyPurgeEvery) || !m.lastPurge.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	_, _ = m.store.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL))
}

// replay writes a stored response again.
func replay(w http.ResponseWriter, rec petstore.IdempotencyRecord) {
	h := w.Header()
	if rec.ContentType != "" {
		h.Set("Content-Type", rec.ContentType)
	}
	if rec.Location != "" {
		h.Set("Location", rec.Location)
	}
	h.Set("Idempotent-Replayed", "true")
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// captureWriter passes a response through and keeps a copy of it.
type captureWriter struct {
	statuswriter.Writer
	body bytes.Buffer
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.Writer.Write(b)
}
