package bunstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/httpx"
)

// TestCreateDoesNotWaitForTheHourlyPurge: the request that starts a
// process's hourly purge of expired Idempotency-Key records is a create
// like any other. While another process's purge holds the expired rows
// (a long backlog being deleted), a create with a fresh key still
// answers 201 within its time, not 503 because the purge it started
// waited out its deadline.
func TestCreateDoesNotWaitForTheHourlyPurge(t *testing.T) {
	for _, b := range linkedBackends[:1] { // PostgreSQL; MariaDB: TestPurgeLeavesNewKeysFree
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, b.dsn(t))
			store := bunstore.New(db)
			ctx := context.Background()
			now := time.Now().UTC()
			old := petstore.IdempotencyRecord{Scope: "key_purge", Key: "old", RequestHash: "h", CreatedAt: now.Add(-petstore.IdempotencyTTL - time.Hour)}
			if _, _, err := store.CreateOnce(ctx, old, func(context.Context) (petstore.IdempotencyRecord, bool) {
				out := old
				out.Completed, out.Status = true, http.StatusCreated
				return out, true
			}); err != nil {
				t.Fatal(err)
			}
			// Another process's purge, under way: it holds the expired row.
			other, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback() }()
			if _, err := other.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE created_at_ns < ?", now.Add(-petstore.IdempotencyTTL).UnixNano()); err != nil {
				t.Fatal(err)
			}
			h, err := httpx.New(httpx.Config{
				Service:     petstore.NewService(store),
				Auth:        staticAuth{petstore.APIKey{ID: "key_purge", ProjectID: "prj_purge", Plan: petstore.PlanEnterprise}},
				Idempotency: store,
				Timeout:     time.Second,
				Now:         func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Fresh","categoryId":1}`))
			r.Header.Set("Authorization", "Bearer t")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", "fresh")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				t.Fatalf("a create while another process purges: %d %s, want 201", w.Code, w.Body)
			}
		})
	}
}
