package bunstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/uptrace/bun"
)

// TestKeyChangeLostInABlackHoleFreesTheKey: a revoke or plan change whose
// link goes into a black hole while it holds the key's row (read FOR
// UPDATE) fails at its deadline, and the database ends its transaction
// soon after: another process's change of the same key goes through
// within a few seconds, rather than waiting on a lock no one will release
// (PostgreSQL: for ever; MariaDB: innodb_lock_wait_timeout, 50 s).
func TestKeyChangeLostInABlackHoleFreesTheKey(t *testing.T) {
	for _, b := range linkedBackends {
		for _, op := range []string{"DeleteKey", "SetKeyPlan"} {
			t.Run(b.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				directDB, s, proxy := throughProxy(t, b.dsn(t))
				direct := bunstore.New(directDB)
				ctx := context.Background()
				key, _, err := petstore.NewKeys(s).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				proxy.SetLatency(150 * time.Millisecond)
				struck := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
					defer cancel()
					if op == "DeleteKey" {
						struck <- s.DeleteKey(ctx, key.ID)
						return
					}
					_, err := s.SetKeyPlan(ctx, key.ID, petstore.PlanBusiness, petstore.Limits{})
					struck <- err
				}()
				// Pause the link the moment the struck change holds the row.
				for deadline := time.Now().Add(5 * time.Second); !rowLocked(t, directDB, key.ID); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the struck %s never held the key's row", op)
					}
				}
				proxy.Pause()
				t.Cleanup(proxy.Restore)
				if err := <-struck; err == nil {
					t.Fatalf("%s through a black hole succeeded", op)
				}
				began := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, err = direct.SetKeyPlan(cctx, key.ID, petstore.PlanEnterprise, petstore.Limits{})
				if took := time.Since(began); err != nil || took > 4*time.Second {
					t.Fatalf("another process's SetKeyPlan of the key: %v after %v; want it done within 4 s", err, took.Round(time.Millisecond))
				}
			})
		}
	}
}

// rowLocked reports whether another transaction holds the api_keys row
// of id, by asking for it FOR UPDATE without waiting.
func rowLocked(t *testing.T, db *bun.DB, id string) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT id FROM api_keys WHERE id = ? FOR UPDATE NOWAIT", id)
	return err != nil
}
