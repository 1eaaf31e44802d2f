package httpx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
)

// idempotencyPurgeEvery is how often expired Idempotency-Key records are
// purged, by the request that notices. Once an hour keeps the table at
// about a day of keys without a long-lived goroutine.
const idempotencyPurgeEvery = time.Hour

// idempotent makes POST /pets and POST /store/orders safe to retry (the
// IETF httpapi Idempotency-Key draft, Stripe's model): docs/api.md says
// what a client sees, docs/operating.md#reliability what a lost database
// does to it. The store runs the operation once per key, scoped to the
// API key (petstore.IdempotencyStore.CreateOnce), committing the creation
// with the record of its response; the response is held until then
// (heldResponse). A 5xx answer is not stored, so its retry runs again.
// Bodies are the same request when they decode to the same T (requestHash).
type idempotent[T any] struct {
	store     petstore.IdempotencyStore
	now       func() time.Time
	next      creation[T]
	cache     *Cache       // Config.Cache, which a pet's replay empties
	pets      bool         // next creates pets, whose answers carry their body's ETag
	lastPurge atomic.Int64 // unix nanoseconds of the last purge
}

// creation answers a creation whose body was decoded to a T: the
// operation, or the Idempotency-Key wrapper, which hashes exactly that T.
type creation[T any] func(w http.ResponseWriter, r *http.Request, v T)

// idempotently returns op wrapped in Idempotency-Key replay when
// cfg.Idempotency is set, and op itself otherwise. pets says whether op
// creates pets (else orders), whose replays carry their body's ETag and
// empty the cache.
func idempotently[T any](cfg Config, op creation[T], pets bool) creation[T] {
	if cfg.Idempotency == nil {
		return op
	}
	m := &idempotent[T]{store: cfg.Idempotency, now: cfg.Now, next: op, cache: cfg.Cache, pets: pets}
	if m.now == nil {
		m.now = time.Now
	}
	return m.serve
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

// serve runs a decoded creation with Idempotency-Key replay.
func (m *idempotent[T]) serve(w http.ResponseWriter, r *http.Request, v T) {
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		m.next(w, r, v)
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
	var held *heldResponse
	commits := &commitHooks{}
	ctx = context.WithValue(ctx, commitHooksKey{}, commits)
	create := func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
		held = &heldResponse{header: http.Header{}}
		m.next(held, r.WithContext(ctx), v)
		out := rec
		out.Completed = true
		out.Status = held.status
		out.ContentType = held.header.Get("Content-Type")
		out.Location = held.header.Get("Location")
		out.Body = held.body.Bytes()
		return out, held.status != 0 && held.status < 500
	}
	stored, ran, err := m.store.CreateOnce(ctx, rec, create)
	if ran {
		// The creation is committed, or may be: only now may the cache
		// drop what it changed, or a read between the drop and the
		// commit would keep the page without the new pet.
		for _, fn := range commits.fns {
			fn()
		}
	}
	switch {
	case err != nil:
		// Whatever create answered, it was not stored, or not known to
		// be: the client must retry, and its retry learns the outcome.
		WriteError(w, r, err)
	case ran:
		held.sendTo(w)
	case stored.RequestHash != rec.RequestHash:
		WriteError(w, r, petstore.Errorf(petstore.CodeIdempotencyKeyReused, "this Idempotency-Key was used with a different request; use a new key for a new request"))
	case !stored.Completed:
		w.Header().Set("Retry-After", "1")
		WriteError(w, r, petstore.Errorf(petstore.CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still being processed; retry later"))
	default:
		m.replay(w, stored)
	}
}

// purge deletes expired records at most once per idempotencyPurgeEvery,
// off the request and its deadline: a long backlog, or another process's
// purge holding the rows, must neither fail the create nor cut the purge
// short. A failed purge is retried by the next period's first request.
func (m *idempotent[T]) purge(ctx context.Context, now time.Time) {
	last := m.lastPurge.Load()
	if now.UnixNano()-last >= int64(idempotencyPurgeEvery) && m.lastPurge.CompareAndSwap(last, now.UnixNano()) {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idempotencyPurgeEvery)
			defer cancel()
			_, _ = m.store.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL))
		}()
	}
}

// replay writes a stored response again. A pet's carries its body's
// ETag, as the first answer did, and empties the cache, which the first
// request, committed, may not have told yet.
func (m *idempotent[T]) replay(w http.ResponseWriter, rec petstore.IdempotencyRecord) {
	h := w.Header()
	if rec.ContentType != "" {
		h.Set("Content-Type", rec.ContentType)
	}
	if rec.Location != "" {
		h.Set("Location", rec.Location)
	}
	if m.pets && rec.Status/100 == 2 {
		h.Set("ETag", ETag(rec.Body)) // the original's: a strong ETag is its body's
		m.cache.Apply(changefeed.Change{Kind: changefeed.KindPets})
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Idempotent-Replayed", "true")
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// commitHooks are what a creation inside CreateOnce asks to run once its
// transaction has committed (afterCommit).
type commitHooks struct{ fns []func() }

type commitHooksKey struct{}

// afterCommit runs fn once the creation running under ctx is committed:
// at once, or, inside an Idempotency-Key's CreateOnce, after its commit.
func afterCommit(ctx context.Context, fn func()) {
	if h, ok := ctx.Value(commitHooksKey{}).(*commitHooks); ok {
		h.fns = append(h.fns, fn)
		return
	}
	fn()
}

// heldResponse keeps a response until the store has committed it: the
// client must not see a 201 whose record was not stored.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK) // kept only if nothing was written before
	return h.body.Write(b)
}

// sendTo writes the held response to w.
func (h *heldResponse) sendTo(w http.ResponseWriter) {
	maps.Copy(w.Header(), h.header)
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}
