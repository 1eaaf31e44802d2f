package keycache_test

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/keycache"
	"github.com/uptrace/bun"
)

// TestChangeWhoseAnswerIsLost: PostgreSQL commits a revoke, a plan change
// or an unrevoke, but its answer is lost on a paused link, so the call
// fails. The change is stored all the same, so the cache of the process
// that made it (and, through the hook, every other process) drops what it
// held of the key, as after a change that succeeded.
func TestChangeWhoseAnswerIsLost(t *testing.T) {
	direct := testenv.PostgresSchema(t)
	proxy, dsn := faultproxy.StartFor(t, direct)
	ctx := context.Background()
	admin, err := bunopen.Open(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	db, err := bunopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := bunstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Every commit that revokes, reinstates or re-plans a key waits, at
	// its very end, for an advisory lock the test holds while it pauses
	// the link: PostgreSQL then commits, and its answer goes nowhere.
	lock := mathrand.Int32N(1 << 30)
	for _, q := range []string{
		fmt.Sprintf(`CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_advisory_xact_lock(7, %d); RETURN NULL; END $$`, lock),
		`CREATE CONSTRAINT TRIGGER hold_revoke AFTER INSERT ON revoked_keys
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit()`,
		`CREATE CONSTRAINT TRIGGER hold_key AFTER INSERT OR UPDATE ON api_keys
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })

	// loseAnswer runs change while the link to PostgreSQL is paused from
	// the moment its commit is held until PostgreSQL has made it, and
	// returns change's error.
	loseAnswer := func(t *testing.T, change func(context.Context) error, committed string, args ...any) error {
		t.Helper()
		if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock(7, ?)", lock); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- change(cctx) }()
		waitFor(t, admin, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 7 AND objid = ?", lock)
		proxy.Pause()
		if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock(7, ?)", lock); err != nil {
			t.Fatal(err)
		}
		waitFor(t, admin, committed, args...)
		cancel() // the caller gives up waiting for the answer
		err := <-errc
		proxy.Restore()
		if err == nil {
			t.Fatal("the change returned no error although its answer was lost")
		}
		return err
	}

	clk := newClock()
	keys, cache := keycache.NewKeys(bunstore.New(db), nil, keycache.Config{Now: clk.Now}, nil)
	key, secret := newKey(t, keys, petstore.PlanFree)
	wantKey(t, cache, secret, key)

	err = loseAnswer(t, func(ctx context.Context) error {
		_, err := keys.SetPlan(ctx, key.ID, petstore.PlanBusiness, petstore.Limits{})
		return err
	}, "SELECT count(*) FROM api_keys WHERE id = ? AND plan = 'business'", key.ID)
	t.Logf("set-plan whose answer was lost: %v", err)
	key.Plan = petstore.PlanBusiness
	if got, err := cache.Authenticate(ctx, secret); err != nil || got != key {
		t.Errorf("after a set-plan whose answer was lost: %+v, %v; want %+v", got, err, key)
	}

	err = loseAnswer(t, func(ctx context.Context) error { return keys.Revoke(ctx, key.ID) },
		"SELECT count(*) FROM revoked_keys WHERE id = ?", key.ID)
	t.Logf("revoke whose answer was lost: %v", err)
	if got, err := cache.Authenticate(ctx, secret); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
		t.Errorf("after a revoke whose answer was lost: %+v, %v; want unauthorized", got, err)
	}

	err = loseAnswer(t, func(ctx context.Context) error {
		_, err := keys.Unrevoke(ctx, key.ID)
		return err
	}, "SELECT count(*) FROM api_keys WHERE id = ?", key.ID)
	t.Logf("unrevoke whose answer was lost: %v", err)
	if got, err := cache.Authenticate(ctx, secret); err != nil || got != key {
		t.Errorf("after an unrevoke whose answer was lost: %+v, %v; want %+v", got, err, key)
	}
}

// waitFor polls db until query, a count, counts a row.
func waitFor(t *testing.T, db *bun.DB, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, still nothing for %s", query)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
