package bunstore_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/uptrace/bun"
)

// TestCreateDoesNotWaitForTheHourlyPurge: the request that starts a
// process's hourly purge of expired Idempotency-Key records is a create
// like any other. While another process's purge holds the expired rows
// (a long backlog being deleted), a create with a fresh key still
// answers 201 within its time, not 503 because the purge it started
// waited out its deadline.
func TestCreateDoesNotWaitForTheHourlyPurge(t *testing.T) {
	for _, b := range linkedBackends {
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
			// Another process's purge, as the store runs it, under way: it
			// holds the expired row.
			other, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
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

// TestPurgeLeavesNewKeysFree (MariaDB): while a purge deletes a long
// backlog of expired records, a create with a new key runs at once rather
// than waiting for the whole purge behind the locks it takes on rows it
// keeps and on the gaps between them.
func TestPurgeLeavesNewKeysFree(t *testing.T) {
	db := openMySQL(t)
	store := bunstore.New(db)
	ctx := context.Background()
	now := time.Now().UTC()
	if _, err := db.ExecContext(ctx, "INSERT INTO idempotency_keys (scope, idem_key, request_hash, created_at_ns, completed)"+
		" SELECT 'key_backlog', CONCAT('k', seq), 'h', ? + seq, TRUE FROM seq_1_to_300000",
		now.Add(-petstore.IdempotencyTTL-time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	purged := make(chan error, 1)
	go func() {
		_, err := store.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL))
		purged <- err
	}()
	for running := 0; running == 0; {
		select {
		case err := <-purged:
			t.Fatalf("the purge ended (%v) before it was seen running", err)
		default:
		}
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST"+
			" WHERE DB = DATABASE() AND INFO LIKE 'DELETE%idempotency_keys%'").Scan(&running); err != nil {
			t.Fatal(err)
		}
	}
	rec := petstore.IdempotencyRecord{Scope: "key_a", Key: "new", RequestHash: "h", CreatedAt: now}
	if _, ran, err := store.CreateOnce(ctx, rec, func(context.Context) (petstore.IdempotencyRecord, bool) {
		out := rec
		out.Completed, out.Status = true, http.StatusCreated
		return out, true
	}); err != nil || !ran {
		t.Fatalf("CreateOnce during the purge: ran %v, %v", ran, err)
	}
	select {
	case <-purged:
		t.Fatal("the create with a new key waited for the purge to end")
	default:
	}
	if err := <-purged; err != nil {
		t.Fatal(err)
	}
}

// TestPurgeLostInABlackHoleFreesTheRows: a purge whose link goes into a
// black hole while it holds the expired rows it deletes fails at its
// deadline, and the database ends its transaction soon after: another
// process's purge deletes those rows within a few seconds, rather than
// waiting on locks no one will release (PostgreSQL: for ever; MariaDB:
// innodb_lock_wait_timeout, 50 s).
func TestPurgeLostInABlackHoleFreesTheRows(t *testing.T) {
	for _, b := range linkedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			directDB, s, proxy := throughProxy(t, b.dsn(t))
			direct := bunstore.New(directDB)
			ctx := context.Background()
			now := time.Now().UTC()
			old := petstore.IdempotencyRecord{Scope: "key_lost", Key: "old", RequestHash: "h", CreatedAt: now.Add(-petstore.IdempotencyTTL - time.Hour)}
			if _, _, err := direct.CreateOnce(ctx, old, func(context.Context) (petstore.IdempotencyRecord, bool) {
				out := old
				out.Completed, out.Status = true, http.StatusCreated
				return out, true
			}); err != nil {
				t.Fatal(err)
			}
			proxy.SetLatency(150 * time.Millisecond)
			struck := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
				defer cancel()
				_, err := s.PurgeIdempotencyKeys(ctx, now.Add(-petstore.IdempotencyTTL))
				struck <- err
			}()
			// Pause the link the moment the struck purge holds the row.
			for deadline := time.Now().Add(5 * time.Second); !idemRowLocked(t, directDB, old.Scope, old.Key); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the struck purge never held the expired row")
				}
			}
			proxy.Pause()
			t.Cleanup(proxy.Restore)
			if err := <-struck; err == nil {
				t.Fatal("a purge through a black hole succeeded")
			}
			began := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			n, err := direct.PurgeIdempotencyKeys(cctx, now.Add(-petstore.IdempotencyTTL))
			if took := time.Since(began); err != nil || n != 1 || took > 4*time.Second {
				t.Fatalf("another process's purge: %d deleted, %v after %v; want 1 within 4 s", n, err, took.Round(time.Millisecond))
			}
		})
	}
}

// idemRowLocked reports whether another transaction holds the
// idempotency_keys row (scope, key), by asking for it FOR UPDATE without
// waiting.
func idemRowLocked(t *testing.T, db *bun.DB, scope, key string) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT scope FROM idempotency_keys WHERE scope = ? AND idem_key = ? FOR UPDATE NOWAIT", scope, key)
	return err != nil
}

// TestExpiredKeyReusedDoesNotPurgeTheBacklog: a create whose
// Idempotency-Key names a record past IdempotencyTTL replaces that one
// record, not every expired record: while another process holds
// another expired row (its purge under way), the create answers 201
// within its time rather than waiting behind that row.
func TestExpiredKeyReusedDoesNotPurgeTheBacklog(t *testing.T) {
	for _, b := range linkedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, b.dsn(t))
			store := bunstore.New(db)
			ctx := context.Background()
			now := time.Now().UTC()
			// Both records expire a millisecond before now.
			for _, k := range []string{"mine", "theirs"} {
				old := petstore.IdempotencyRecord{Scope: "key_reuse", Key: k, RequestHash: "h", CreatedAt: now.Add(-petstore.IdempotencyTTL - time.Millisecond)}
				if _, _, err := store.CreateOnce(ctx, old, func(context.Context) (petstore.IdempotencyRecord, bool) {
					out := old
					out.Completed, out.Status = true, http.StatusCreated
					return out, true
				}); err != nil {
					t.Fatal(err)
				}
			}
			var clock atomic.Int64
			clock.Store(now.Add(-30 * time.Minute).UnixNano())
			h, err := httpx.New(httpx.Config{
				Service:     petstore.NewService(store),
				Auth:        staticAuth{petstore.APIKey{ID: "key_reuse", ProjectID: "prj_reuse", Plan: petstore.PlanEnterprise}},
				Idempotency: store,
				Timeout:     time.Second,
				Now:         func() time.Time { return time.Unix(0, clock.Load()).UTC() },
			})
			if err != nil {
				t.Fatal(err)
			}
			create := func(key string) *httptest.ResponseRecorder {
				r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Again","categoryId":1}`))
				r.Header.Set("Authorization", "Bearer t")
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Idempotency-Key", key)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			// The process's hourly purge runs with this first create, half
			// an hour before the records expire, and not again until an
			// hour later.
			if w := create("first"); w.Code != http.StatusCreated {
				t.Fatalf("first create: %d %s", w.Code, w.Body)
			}
			clock.Store(now.UnixNano())
			// Another process's purge holds the other expired row.
			other, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback() }()
			if _, err := other.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE scope = 'key_reuse' AND idem_key = 'theirs'"); err != nil {
				t.Fatal(err)
			}
			if w := create("mine"); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("a create over its own expired key: %d %s, want a fresh 201", w.Code, w.Body)
			}
		})
	}
}
