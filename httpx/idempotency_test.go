package httpx_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
)

// idemEnv is an API with Idempotency-Key support over memory stores, a
// controllable clock, and a service that can be held or made to fail.
type idemEnv struct {
	*env
	svc  *gatedService
	now  *fakeNow
	idem *failingIdemStore
}

// failingIdemStore is a real memory store whose commits can be made to
// fail as a database's do: lostReply commits but answers an error (the
// reply was lost), failCommit writes nothing and answers an error.
type failingIdemStore struct {
	*memstore.Store
	lostReply, failCommit atomic.Bool
}

func (s *failingIdemStore) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	failCommit := s.failCommit.Load()
	out, ran, err := s.Store.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
		out, keep := create(ctx)
		return out, keep && !failCommit
	})
	if ran && (failCommit || s.lostReply.Load()) {
		return petstore.IdempotencyRecord{}, true, petstore.Errorf(petstore.CodeUnavailable, "the database is unavailable; try again later")
	}
	return out, ran, err
}

type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// gatedService wraps a real service: CreatePet can be held until released
// (to catch a request in flight) or fail a number of times.
type gatedService struct {
	petstore.PetService
	mu      sync.Mutex
	gate    chan struct{} // nil: no hold
	entered chan struct{}
	fails   int
}

func (g *gatedService) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	g.mu.Lock()
	gate, entered := g.gate, g.entered
	fail := g.fails > 0
	if fail {
		g.fails--
	}
	g.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if fail {
		return petstore.Pet{}, fmt.Errorf("database on fire")
	}
	return g.PetService.CreatePet(ctx, p)
}

func newIdemEnv(t testing.TB) *idemEnv {
	t.Helper()
	clock := &fakeNow{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	var svc *gatedService
	idem := &failingIdemStore{}
	e := newEnv(t, func(c *httpx.Config) {
		svc = &gatedService{PetService: c.Service}
		c.Service = svc
		c.Idempotency = idem
		c.Now = clock.Now
	})
	// The records are kept by the pets' store, as in production, so a
	// creation and its record are written together.
	idem.Store = e.store
	return &idemEnv{env: e, svc: svc, now: clock, idem: idem}
}

func (e *idemEnv) post(t *testing.T, key, body string) response {
	t.Helper()
	r := e.req("POST", "/v1/pets", body)
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	return e.do(t, r)
}

func (e *idemEnv) petCount(t *testing.T) int {
	t.Helper()
	return len(e.store.Pets())
}

func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	const body = `{"name":"Rex","categoryId":1}`
	t.Run("replay", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		first := e.post(t, "k-1", body)
		second := e.post(t, "k-1", body)
		if first.Status != 201 || second.Status != 201 {
			t.Fatalf("statuses %d, %d; want 201 twice", first.Status, second.Status)
		}
		if string(first.Body) != string(second.Body) || first.Header.Get("Location") != second.Header.Get("Location") {
			t.Fatalf("replay differs: %s %q vs %s %q", first.Body, first.Header.Get("Location"), second.Body, second.Header.Get("Location"))
		}
		if first.Header.Get("Idempotent-Replayed") != "" || second.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("Idempotent-Replayed = %q then %q, want none then true", first.Header.Get("Idempotent-Replayed"), second.Header.Get("Idempotent-Replayed"))
		}
		for _, h := range []string{"Content-Type", "ETag", "X-Content-Type-Options"} {
			if a, b := first.Header.Get(h), second.Header.Get(h); a == "" || a != b {
				t.Errorf("%s: %q, then %q on the replay; want the same, not empty", h, a, b)
			}
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
	t.Run("same JSON, other whitespace and field order", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		first := e.post(t, "k-1", body)
		second := e.post(t, "k-1", "{\n  \"categoryId\": 1,\n  \"name\": \"Rex\"\n}\n")
		if first.Status != 201 || second.Status != 201 || second.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("statuses %d, %d (replayed %q); want 201 then a replayed 201: %s",
				first.Status, second.Status, second.Header.Get("Idempotent-Replayed"), second.Body)
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
	t.Run("commit landed, reply lost: the retry gets the stored 201", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.idem.lostReply.Store(true)
		if got := e.post(t, "k-1", body); got.Status != 503 || got.Header.Get("Retry-After") == "" {
			t.Fatalf("first: %d %s, want 503 with Retry-After: the outcome is unknown", got.Status, got.Body)
		}
		e.idem.lostReply.Store(false)
		got := e.post(t, "k-1", body)
		if got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d replayed %q, want the stored 201", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
	t.Run("commit failed: no 201 is sent and the retry creates", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.idem.failCommit.Store(true)
		if got := e.post(t, "k-1", body); got.Status != 503 || got.Header.Get("Location") != "" {
			t.Fatalf("first: %d %s (Location %q), want 503 and no trace of the 201", got.Status, got.Body, got.Header.Get("Location"))
		}
		if n := e.petCount(t); n != 0 {
			t.Fatalf("%d pets after a failed commit, want 0", n)
		}
		e.idem.failCommit.Store(false)
		if got := e.post(t, "k-1", body); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry: %d replayed %q, want a fresh 201", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
	t.Run("different body", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.post(t, "k-1", body)
		got := e.post(t, "k-1", `{"name":"Tom","categoryId":1}`)
		if got.Status != 422 || got.errorBody(t).Code != petstore.CodeIdempotencyKeyReused {
			t.Fatalf("status %d %s, want 422 idempotency_key_reused", got.Status, got.Body)
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
	t.Run("in flight: a repeat waits for the answer", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.svc.gate, e.svc.entered = make(chan struct{}), make(chan struct{}, 1)
		done := make(chan response, 1)
		go func() { done <- e.post(t, "k-1", body) }()
		<-e.svc.entered
		e.svc.mu.Lock()
		gate := e.svc.gate
		e.svc.gate = nil
		e.svc.mu.Unlock()
		// The repeat waits for the first and answers what it answered.
		second := make(chan response, 1)
		go func() { second <- e.post(t, "k-1", body) }()
		close(gate)
		if first := <-done; first.Status != 201 {
			t.Fatalf("first request: %d", first.Status)
		}
		if got := <-second; got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat while in flight: %d %s, replayed %q; want the first's 201", got.Status, got.Body, got.Header.Get("Idempotent-Replayed"))
		}
		if got := e.post(t, "k-1", body); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after completion: %d, replayed %q", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
	})
	t.Run("concurrent creates one pet", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		var wg sync.WaitGroup
		statuses := make([]int, 16)
		for i := range statuses {
			wg.Go(func() {
				rec := e.req("POST", "/v1/pets", body)
				rec.Header.Set("Idempotency-Key", "race")
				w := &statusRecorder{header: http.Header{}}
				e.h.ServeHTTP(w, rec)
				statuses[i] = w.status
			})
		}
		wg.Wait()
		for _, s := range statuses {
			if s != 201 {
				t.Fatalf("statuses %v, want only 201", statuses)
			}
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets after 16 concurrent requests with one key, want 1", n)
		}
	})
	t.Run("scoped per API key", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		_, other, err := petstore.NewKeys(e.store).Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		e.post(t, "shared", body)
		r := e.req("POST", "/v1/pets", body)
		r.Header.Set("Authorization", "Bearer "+other)
		r.Header.Set("Idempotency-Key", "shared")
		if got := e.do(t, r); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("other key: %d, replayed %q; want a fresh 201", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
		if n := e.petCount(t); n != 2 {
			t.Fatalf("%d pets, want 2", n)
		}
	})
	t.Run("expires after 24 hours", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.post(t, "k-1", body)
		e.now.Advance(petstore.IdempotencyTTL)
		if got := e.post(t, "k-1", body); got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("at 24 h: not replayed (%d)", got.Status)
		}
		e.now.Advance(time.Second)
		if got := e.post(t, "k-1", `{"name":"Tom","categoryId":1}`); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("after 24 h: %d %s, replayed %q; want a fresh 201", got.Status, got.Body, got.Header.Get("Idempotent-Replayed"))
		}
		if n := e.petCount(t); n != 2 {
			t.Fatalf("%d pets, want 2", n)
		}
	})
	t.Run("5xx is not stored", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.svc.fails = 1
		if got := e.post(t, "k-1", body); got.Status != 500 {
			t.Fatalf("first: %d, want 500", got.Status)
		}
		if got := e.post(t, "k-1", body); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry: %d, replayed %q; want a fresh 201", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
	})
	t.Run("4xx is stored", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		bad := `{"name":"","categoryId":1}`
		e.post(t, "k-1", bad)
		if got := e.post(t, "k-1", bad); got.Status != 400 || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat: %d, replayed %q; want the stored 400", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
	})
	t.Run("no key, no replay", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		e.post(t, "", body)
		e.post(t, "", body)
		if n := e.petCount(t); n != 2 {
			t.Fatalf("%d pets, want 2", n)
		}
	})
	t.Run("not configured: header ignored", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		for range 2 {
			r := e.req("POST", "/v1/pets", body)
			r.Header.Set("Idempotency-Key", "k-1")
			if got := e.do(t, r); got.Status != 201 {
				t.Fatalf("status %d", got.Status)
			}
		}
		if n := len(e.store.Pets()); n != 2 {
			t.Fatalf("%d pets, want 2", n)
		}
	})
}

func TestIdempotencyKeyValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []string
		want   int
	}{
		{"uuid", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, 201},
		{"one char", []string{"x"}, 201},
		{"255 chars", []string{strings.Repeat("k", 255)}, 201},
		{"quoted sf-string form", []string{`"abc"`}, 201},
		{"256 chars", []string{strings.Repeat("k", 256)}, 400},
		{"empty", []string{""}, 400},
		{"non-ASCII", []string{"clé"}, 400},
		{"control character", []string{"a\x01b"}, 400},
		{"sent twice", []string{"a", "b"}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newIdemEnv(t)
			r := e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`)
			r.Header["Idempotency-Key"] = tt.values
			got := e.do(t, r)
			if got.Status != tt.want {
				t.Fatalf("status %d, want %d: %s", got.Status, tt.want, got.Body)
			}
			if tt.want == 400 && got.errorBody(t).Code != petstore.CodeInvalidRequest {
				t.Fatalf("body %s", got.Body)
			}
		})
	}
}

// FuzzIdempotencyKey sends arbitrary header values: each is accepted
// (201, or 422 when an earlier input used the same key with another body)
// or refused with 400, and an accepted key is replayed; never a 5xx.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", "", strings.Repeat("x", 256), "a\x00b", "é", `"quoted"`, " spaced ", "\x7f"} {
		f.Add(s)
	}
	e := newIdemEnv(f)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, key string) {
		body := fmt.Sprintf(`{"name":"pet %d","categoryId":1}`, n.Add(1))
		send := func() *statusRecorder {
			r := e.req("POST", "/v1/pets", body)
			r.Header["Idempotency-Key"] = []string{key}
			w := &statusRecorder{header: http.Header{}}
			e.h.ServeHTTP(w, r)
			return w
		}
		first := send()
		switch first.status {
		case 201:
			if again := send(); again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("key %q: repeat got %d, replayed %q", key, again.status, again.header.Get("Idempotent-Replayed"))
			}
		case 400, 422:
		default:
			t.Fatalf("key %q: status %d", key, first.status)
		}
		if valid := petstore.ValidIdempotencyKey(key); valid == (first.status == 400) {
			t.Fatalf("key %q: valid %v but status %d", key, valid, first.status)
		}
	})
}

// statusRecorder is a minimal ResponseWriter for concurrent requests,
// where the contract-checking helper is not needed.
type statusRecorder struct {
	header http.Header
	status int
}

func (w *statusRecorder) Header() http.Header { return w.header }
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(b), nil
}

// TestIdempotencyAnswersDeclareTheirHeaders: the headers of the answers
// only Idempotency-Key gives, a replayed 400 (Idempotent-Replayed) and
// the 409 of a key an older server version still holds (Retry-After),
// are ones the OpenAPI document declares for their status, on both
// creates.
func TestIdempotencyAnswersDeclareTheirHeaders(t *testing.T) {
	ctx := context.Background()
	db, err := bunstore.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	store := bunstore.New(db)
	keys := petstore.NewKeys(store)
	key, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys,
		Orders: petstore.NewOrderService(store), Idempotency: store})
	if err != nil {
		t.Fatal(err)
	}
	router := contractRouter(t, "/v1")
	post := func(path, idem, body string) (*http.Request, response) {
		req := func() *http.Request {
			r := apitest.AuthedReq(secret, "POST", path, body)
			r.Header.Set("Idempotency-Key", idem)
			return r
		}
		return req(), do(t, h, "/v1", req())
	}
	check := func(req *http.Request, res response, status int, header string) {
		t.Helper()
		if res.Status != status || res.Header.Get(header) == "" {
			t.Fatalf("%s %s: %d %s with %s %q; want %d with it", req.Method, req.URL, res.Status, res.Body, header, res.Header.Get(header), status)
		}
		if u := undeclaredHeaders(t, router, req, res); len(u) > 0 {
			t.Fatalf("%s %s: %d carries %v, which the document does not declare", req.Method, req.URL, res.Status, u)
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/store/orders", `{"petId":12345}`},    // no such pet: a 400 of the operation, stored
		{"/v1/pets", `{"name":"","categoryId":1}`}, // the service's own check
	} {
		if _, res := post(c.path, "replayed-400"+c.path, c.body); res.Status != 400 {
			t.Fatalf("%s: %d %s, want 400", c.path, res.Status, res.Body)
		}
		req, res := post(c.path, "replayed-400"+c.path, c.body)
		check(req, res, 400, "Idempotent-Replayed")
	}

	// A record an older version claimed and never completed.
	canon, _ := json.Marshal(petstore.NewPet{Name: "Rex", CategoryID: 1})
	sum := sha256.Sum256([]byte("POST /v1/pets\n" + string(canon)))
	if _, err := db.ExecContext(ctx, "INSERT INTO idempotency_keys (scope, idem_key, request_hash, created_at_ns, completed, status, content_type, location) VALUES (?, ?, ?, ?, 0, 0, '', '')",
		key.ID, "legacy", hex.EncodeToString(sum[:]), time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	req, res := post("/v1/pets", "legacy", `{"name":"Rex","categoryId":1}`)
	check(req, res, 409, "Retry-After")
}

// lateIdemStore is a real memory store whose first CreateOnce to run its
// create returns only when released, after it committed: the reply of a
// database's commit that comes late.
type lateIdemStore struct {
	*memstore.Store
	committed, release chan struct{}
	once               sync.Once
}

func (s *lateIdemStore) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	out, ran, err := s.Store.CreateOnce(ctx, rec, create)
	if ran {
		s.once.Do(func() {
			close(s.committed)
			<-s.release
		})
	}
	return out, ran, err
}

// A retry replayed while the first request, committed, has not returned
// yet, is followed by reads that hold the pet it was told of: the process
// reads its own writes, whichever of the two answered first.
func TestReplayedCreateIsReadAtOnce(t *testing.T) {
	late := &lateIdemStore{committed: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, func(c *httpx.Config) { c.Idempotency = late })
	late.Store = e.store
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	call := func(method, body string) (*http.Response, string) {
		t.Helper()
		r := e.req(method, srv.URL+"/v1/pets", body)
		r.RequestURI = ""
		if method == "POST" {
			r.Header.Set("Idempotency-Key", "k-1")
		}
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	const body = `{"name":"Rex","categoryId":1}`
	if _, page := call("GET", ""); strings.TrimSpace(page) != "[]" {
		t.Fatalf("first page = %s, want []", page)
	}
	first := make(chan struct{})
	go func() {
		defer close(first)
		call("POST", body)
	}()
	<-late.committed
	res, _ := call("POST", body)
	if res == nil || res.StatusCode != 201 || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry while the first request has not returned: %v, want a replayed 201", res)
	}
	_, page := call("GET", "")
	close(late.release)
	<-first
	if !strings.Contains(page, `"Rex"`) {
		t.Fatalf("page read after the replayed 201 = %s, want it to hold Rex", page)
	}
}
