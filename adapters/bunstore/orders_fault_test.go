package bunstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
)

// faultAfterOrder is an OrderService whose CreateOrder, once the order's
// insert has gone out, strikes the link with fault, the first time.
type faultAfterOrder struct {
	petstore.OrderService
	once  sync.Once
	fault func()
}

func (f *faultAfterOrder) CreateOrder(ctx context.Context, projectID string, o petstore.NewOrder) (petstore.Order, error) {
	order, err := f.OrderService.CreateOrder(ctx, projectID, o)
	f.once.Do(f.fault)
	return order, err
}

// TestOrderFaultAsTheWriteGoesOut: as TestFaultAsTheWriteGoesOut, for
// POST /store/orders: cut, paused or slowed the moment the order's insert
// has gone out, the create answers 503 (or 201), and the retry with the
// same key ends in one order, replayed after.
func TestOrderFaultAsTheWriteGoesOut(t *testing.T) {
	for _, b := range linkedBackends {
		for _, fault := range []string{"cut", "pause", "slow"} {
			t.Run(b.name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				directDB, store, proxy := throughProxy(t, b.dsn(t))
				ctx := context.Background()
				pet, err := store.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
				if err != nil {
					t.Fatal(err)
				}
				strike := map[string]func(){"cut": proxy.Cut, "pause": proxy.Pause, "slow": func() { proxy.SetLatency(700 * time.Millisecond) }}[fault]
				h, err := httpx.New(httpx.Config{
					Service:     petstore.NewService(store),
					Orders:      &faultAfterOrder{OrderService: petstore.NewOrderService(store), fault: strike},
					Auth:        staticAuth{petstore.APIKey{ID: "key_faults", ProjectID: "prj_faults", Plan: petstore.PlanEnterprise}},
					Idempotency: store,
					Timeout:     time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				post := func() *httptest.ResponseRecorder {
					r := httptest.NewRequest("POST", "/v1/store/orders", strings.NewReader(fmt.Sprintf(`{"petId":%d,"quantity":3}`, pet.ID)))
					r.Header.Set("Authorization", "Bearer t")
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("Idempotency-Key", "struck-order")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					return w
				}
				first := post()
				if first.Code != http.StatusServiceUnavailable && first.Code != http.StatusCreated {
					t.Fatalf("the struck create: %d %s, want 503 or 201", first.Code, first.Body)
				}
				proxy.Restore()
				w := retryUntilCreated(t, post)
				if first.Code == http.StatusCreated && first.Body.String() != w.Body.String() {
					t.Fatalf("first 201 %s, retry %s", first.Body, w.Body)
				}
				if again := post(); again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != w.Body.String() {
					t.Fatalf("the replay: %d %s", again.Code, again.Body)
				}
				var n int
				if err := directDB.NewRaw("SELECT COUNT(*) FROM store_orders WHERE project_id = 'prj_faults'").Scan(ctx, &n); err != nil || n != 1 {
					t.Fatalf("%d orders (%v), want 1", n, err)
				}
			})
		}
	}
}
