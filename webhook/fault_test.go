package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/webhook"
)

// TestAnswerLostToAPausedDatabaseIsSentAgain holds docs/custom-domains.md
// ("Webhooks"): a process whose database link is paused (a black hole)
// after it sent an attempt cannot record the answer; it gives up when its
// lease ends, never hanging past it, and another process sends the
// attempt again once the lease has run out and records it. The event is
// not lost and keeps its id, which is why receivers deduplicate by it. On
// PostgreSQL and MariaDB.
func TestAnswerLostToAPausedDatabaseIsSentAgain(t *testing.T) {
	for _, db := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"postgres", testenv.PostgresSchema},
		{"mariadb", testenv.MySQLDatabase},
	} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			storeB := openStore(t, direct)
			var mu sync.Mutex
			var ids []string // of the events received, in order
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var ev struct{ ID string }
				_ = json.NewDecoder(r.Body).Decode(&ev)
				mu.Lock()
				ids = append(ids, ev.ID)
				first := len(ids) == 1
				mu.Unlock()
				if first {
					proxy.Pause() // A's answer will find its database gone
				}
			}))
			t.Cleanup(srv.Close)
			const lease = time.Second // the least New allows for a 200 ms Timeout is just over 800 ms
			config := func(s *bunstore.Store) webhook.Config {
				return webhook.Config{Store: s, AllowPrivate: true, Timeout: 200 * time.Millisecond, Lease: lease}
			}
			a, b := newService(t, config(openStore(t, proxied))), newService(t, config(storeB))
			ep, err := b.CreateEndpoint(ctx, "prj_a", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			defer proxy.Restore()

			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() { n, err := a.DeliverDue(ctx); done <- result{n, err} }()
			select {
			case r := <-done:
				if r.n != 1 || r.err != nil {
					t.Fatalf("A's DeliverDue: %d claimed, %v; want the one delivery", r.n, r.err)
				}
			case <-time.After(lease + time.Second):
				proxy.Restore() // lets it end
				t.Fatalf("A's DeliverDue still runs %v after it began, with its database paused; want it done within its %v lease", lease+time.Second, lease)
			}
			// B takes the attempt over once A's lease has run out.
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, err := b.DeliverDue(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("B claimed nothing within 5 s: the attempt A could not record is not sent again")
				}
				time.Sleep(50 * time.Millisecond) // a poll interval
			}
			ds, err := b.Deliveries(ctx, "prj_a", ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].State != webhook.StateSucceeded || ds[0].Attempts != 1 {
				t.Fatalf("deliveries after B's attempt: %+v; want one succeeded, at its first recorded attempt", ds)
			}
			// A's link is back: what it held records nothing over B's
			// answer, and nothing is due.
			proxy.Restore()
			if n, err := a.DeliverDue(ctx); n != 0 || err != nil {
				t.Fatalf("A's DeliverDue once its database is back: %d claimed, %v; want nothing due", n, err)
			}
			if ds2, err := a.Deliveries(ctx, "prj_a", ep.ID); err != nil || len(ds2) != 1 || ds2[0].State != webhook.StateSucceeded || ds2[0].Attempts != 1 {
				t.Fatalf("deliveries once A's database is back: %+v %v", ds2, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ids) != 2 || ids[0] != ids[1] || ids[0] == "" {
				t.Fatalf("the receiver got events %q; want the same event twice (A's unrecorded attempt, B's)", ids)
			}
		})
	}
}
