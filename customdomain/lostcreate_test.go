package customdomain_test

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/faultproxy"
)

// commitGate makes every insert into domains wait, just before it
// commits, for a lock the test holds: the test then pauses the link, lets
// the insert commit, and the answer goes nowhere.
type commitGate struct {
	create  []string // statements that install the gate
	hold    string   // takes the lock on the holder's connection
	release string   // releases it
	waiting string   // counts inserts waiting for the lock
}

func gateFor(name string, lock int32) commitGate {
	if name == "PostgreSQL" {
		return commitGate{
			create: []string{
				fmt.Sprintf(`CREATE FUNCTION hold_domain_commit() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN PERFORM pg_advisory_xact_lock(8, %d); RETURN NULL; END $$`, lock),
				`CREATE CONSTRAINT TRIGGER hold_domain_insert AFTER INSERT ON domains
					DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_domain_commit()`,
			},
			hold:    fmt.Sprintf("SELECT pg_advisory_lock(8, %d)", lock),
			release: fmt.Sprintf("SELECT pg_advisory_unlock(8, %d)", lock),
			waiting: fmt.Sprintf("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 8 AND objid = %d", lock),
		}
	}
	// MariaDB commits an autocommitted insert right after its triggers.
	key := fmt.Sprintf("'hold_domain_insert_%d'", lock)
	return commitGate{
		create: []string{
			`CREATE TRIGGER hold_domain_insert AFTER INSERT ON domains FOR EACH ROW
				BEGIN SET @held = GET_LOCK(` + key + `, 60); SET @held = RELEASE_LOCK(` + key + `); END`,
		},
		hold:    "SELECT GET_LOCK(" + key + ", 10)",
		release: "SELECT RELEASE_LOCK(" + key + ")",
		waiting: "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND DB = DATABASE() AND INFO LIKE 'SET @held%'",
	}
}

// TestAddWhoseAnswerIsLostIsAddedOnRetry: the database commits a new
// domain but the answer is lost (the link cut after the commit), so Add
// fails; the dashboard's retry of the same add then answers the domain
// as already there (200), not conflict, and the project holds it once.
func TestAddWhoseAnswerIsLostIsAddedOnRetry(t *testing.T) {
	for _, db := range linkedDatabases {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, through := faultproxy.StartFor(t, direct)
			t.Cleanup(proxy.Restore)
			admin := openBun(t, direct)
			if err := bunstore.Migrate(ctx, admin.DB()); err != nil {
				t.Fatal(err)
			}
			gate := gateFor(db.name, mathrand.Int32N(1<<30))
			for _, q := range gate.create {
				if _, err := admin.DB().ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			holder, err := admin.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = holder.Close() })
			w := domaintest.New(t, domaintest.Options{Store: openBun(t, through), Projects: projects})

			if _, err := holder.ExecContext(ctx, gate.hold); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, _, err := w.Engine.Add(cctx, "prj_pro", "shop.example.com")
				errc <- err
			}()
			waitForCount(t, admin.DB(), gate.waiting)
			proxy.Pause()
			if _, err := holder.ExecContext(ctx, gate.release); err != nil {
				t.Fatal(err)
			}
			waitForCount(t, admin.DB(), "SELECT count(*) FROM domains WHERE held_name = 'shop.example.com'")
			proxy.Cut() // the answer is lost with the link
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("Add returned no error although its answer was lost")
			} else {
				t.Logf("add whose answer was lost: %v", err)
			}
			proxy.Restore()

			d, created, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com")
			if err != nil {
				t.Fatalf("retried Add = %v; want the domain, already there", err)
			}
			if created || d.Name != "shop.example.com" || d.Status != customdomain.StatusPending {
				t.Fatalf("retried Add = %+v, created %v; want the pending domain, not created", d, created)
			}
			ds, err := w.Engine.List(ctx, "prj_pro")
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 {
				t.Fatalf("the project lists %d domains, want 1: %+v", len(ds), ds)
			}
		})
	}
}

// waitForCount polls db until query, a count, counts a row.
func waitForCount(t *testing.T, db *bun.DB, query string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
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
