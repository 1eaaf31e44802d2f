package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/testenv"
)

// newAPI builds the full /v1 handler over store, as one server process
// would.
func newAPI(t testing.TB, store *bunstore.Store) http.Handler {
	t.Helper()
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func do(t testing.TB, h http.Handler, method, target, secret, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+secret)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var nextLink = regexp.MustCompile(`<([^>]+)>; rel="next"`)

// TestTwoProcessesShareOnePostgreSQL runs two API handlers, each with its
// own connection pool, over one PostgreSQL schema: a key created through
// one authenticates on the other, and pets written through either are
// listed, page by page following Link, by both.
func TestTwoProcessesShareOnePostgreSQL(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	a, b := bunstore.New(openDSN(t, dsn)), bunstore.New(openDSN(t, dsn))
	apiA, apiB := newAPI(t, a), newAPI(t, b)
	_, secret, err := petstore.NewKeys(a).Create(context.Background(), "", petstore.PlanBusiness, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var created []int64
	for i, h := range []http.Handler{apiA, apiB, apiA, apiB, apiB} {
		w := do(t, h, "POST", "/v1/pets", secret, fmt.Sprintf(`{"name":"pet %d","categoryId":1,"status":"pending"}`, i))
		if w.Code != http.StatusCreated {
			t.Fatalf("POST through handler %d: %d %s", i%2, w.Code, w.Body)
		}
		var p petstore.Pet
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		created = append(created, p.ID)
	}
	for name, h := range map[string]http.Handler{"A": apiA, "B": apiB} {
		t.Run(name, func(t *testing.T) {
			var listed []int64
			target := "/v1/pets?limit=2&status=pending"
			for target != "" {
				w := do(t, h, "GET", target, secret, "")
				if w.Code != http.StatusOK {
					t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
				}
				var pets []petstore.Pet
				if err := json.Unmarshal(w.Body.Bytes(), &pets); err != nil {
					t.Fatal(err)
				}
				for _, p := range pets {
					listed = append(listed, p.ID)
				}
				target = ""
				if m := nextLink.FindStringSubmatch(w.Header().Get("Link")); m != nil {
					target = m[1]
				}
			}
			if fmt.Sprint(listed) != fmt.Sprint(created) {
				t.Fatalf("handler %s listed %v, want %v", name, listed, created)
			}
		})
	}
}

// TestDownDatabaseGives503 checks the whole path a client sees: with the
// database gone the API answers 503 unavailable, with no driver text, and
// keeps serving.
func TestDownDatabaseGives503(t *testing.T) {
	db := openMemory(t)
	store := bunstore.New(db)
	_, secret, err := petstore.NewKeys(store).Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	api := newAPI(t, store)
	if w := do(t, api, "GET", "/v1/pets", secret, ""); w.Code != http.StatusOK {
		t.Fatalf("before: %d %s", w.Code, w.Body)
	}
	_ = db.Close()
	for range 2 {
		w := do(t, api, "GET", "/v1/pets", secret, "")
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"unavailable"`) {
			t.Fatalf("with the database closed: %d %s, want 503 unavailable", w.Code, w.Body)
		}
		if strings.Contains(strings.ToLower(w.Body.String()), "sql") {
			t.Fatalf("body leaks driver text: %s", w.Body)
		}
	}
}

// TestIdempotentRetryAcrossProcesses sends a POST through one handler and
// its retry, with the same Idempotency-Key, through another over the same
// PostgreSQL schema: the retry replays the first response and no second
// pet is created.
func TestIdempotentRetryAcrossProcesses(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	var apis []http.Handler
	var store *bunstore.Store
	for range 2 {
		store = bunstore.New(openDSN(t, dsn))
		h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), Idempotency: store})
		if err != nil {
			t.Fatal(err)
		}
		apis = append(apis, h)
	}
	_, secret, err := petstore.NewKeys(store).Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"name":"Rex","categoryId":1}`
	var responses []*httptest.ResponseRecorder
	for _, h := range apis {
		r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+secret)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "order-42")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		responses = append(responses, w)
	}
	first, retry := responses[0], responses[1]
	if first.Code != http.StatusCreated || retry.Code != http.StatusCreated || retry.Body.String() != first.Body.String() {
		t.Fatalf("first %d %s, retry %d %s; want the same 201", first.Code, first.Body, retry.Code, retry.Body)
	}
	if retry.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry headers %v; want Idempotent-Replayed: true", retry.Header())
	}
	pets, err := store.ListPets(context.Background(), petstore.PetQuery{Limit: 10})
	if err != nil || len(pets) != 1 {
		t.Fatalf("%d pets stored, %v; want 1", len(pets), err)
	}
}

// TestIdempotentOrderCreate: an order created with an Idempotency-Key
// checks its pet and is stored inside the record's transaction, on every
// database (an in-memory SQLite database has one connection, which the
// transaction holds), and its retry replays it without a second order.
func TestIdempotentOrderCreate(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			store := bunstore.New(b.open(t))
			ctx := context.Background()
			key, secret, err := petstore.NewKeys(store).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			pet, err := store.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
			if err != nil {
				t.Fatal(err)
			}
			h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), Idempotency: store,
				Orders: petstore.NewOrderService(store), Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var bodies []string
			for _, idem := range []string{"o-1", "o-1"} {
				r := httptest.NewRequest("POST", "/v1/store/orders", strings.NewReader(fmt.Sprintf(`{"petId":%d,"quantity":2}`, pet.ID)))
				r.Header.Set("Authorization", "Bearer "+secret)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Idempotency-Key", idem)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					t.Fatalf("order: %d %s", w.Code, w.Body)
				}
				bodies = append(bodies, w.Body.String())
			}
			if bodies[0] != bodies[1] {
				t.Fatalf("retry %s, want the first answer %s", bodies[1], bodies[0])
			}
			orders, err := store.ListOrders(ctx, petstore.OrderQuery{ProjectID: key.ProjectID, Limit: 10})
			if err != nil || len(orders) != 1 {
				t.Fatalf("%d orders, %v; want 1", len(orders), err)
			}
		})
	}
}

// readBeforeCommit is an IdempotencyStore whose creations, once they
// have answered and before their transaction commits, have read run: a
// reader on another connection at that moment.
type readBeforeCommit struct {
	*bunstore.Store
	read func()
}

func (s readBeforeCommit) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	return s.Store.CreateOnce(ctx, rec, func(ctx context.Context) (petstore.IdempotencyRecord, bool) {
		out, keep := create(ctx)
		s.read()
		return out, keep
	})
}

// TestCachedPageSeesAnIdempotentCreate: a page read and cached while an
// Idempotency-Key's create is inserted but not yet committed (it cannot
// see the pet) is dropped once the create commits, so the next read
// lists the pet.
func TestCachedPageSeesAnIdempotentCreate(t *testing.T) {
	store := bunstore.New(openFile(t))
	ctx := context.Background()
	_, secret, err := petstore.NewKeys(store).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler
	list := func() string {
		r := httptest.NewRequest("GET", "/v1/pets", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Body.String()
	}
	var during string
	h, err = httpx.New(httpx.Config{
		Service:     petstore.NewService(store),
		Auth:        petstore.NewKeys(store),
		Idempotency: readBeforeCommit{Store: store, read: func() { during = list() }},
		Cache:       httpx.NewCache(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Fresh","categoryId":1}`))
	r.Header.Set("Authorization", "Bearer "+secret)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", "fresh-1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if strings.Contains(during, "Fresh") {
		t.Fatalf("the read during the create saw the uncommitted pet: %s", during)
	}
	if after := list(); !strings.Contains(after, "Fresh") {
		t.Fatalf("the page after the create: %s, want it to list the pet", after)
	}
}
