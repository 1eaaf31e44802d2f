package webhook_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/webhook"
)

// database is a store's database for a test: a name and the DSN of a
// database of the test's own.
type database struct {
	name string
	dsn  func(testing.TB) string
}

// serverDatabases are the database servers the fault tests run on: the
// fault proxy sits on a TCP link, which a SQLite file has not.
var serverDatabases = []database{
	{"postgres", testenv.PostgresSchema},
	{"mariadb", testenv.MySQLDatabase},
}

// sharedDatabases are the stores processes share: a SQLite file and the
// database servers.
var sharedDatabases = append([]database{
	{"sqlite", func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "petstore.db") }},
}, serverDatabases...)

// TestAnswerLostToAPausedDatabaseIsSentAgain holds docs/custom-domains.md
// ("Webhooks"): a process whose database link is paused (a black hole)
// after it sent an attempt cannot record the answer; it gives up when its
// lease ends, never hanging past it, and another process sends the
// attempt again once the lease has run out and records it. The event is
// not lost and keeps its id, which is why receivers deduplicate by it. On
// PostgreSQL and MariaDB.
func TestAnswerLostToAPausedDatabaseIsSentAgain(t *testing.T) {
	answerLostIsSentAgain(t, (*faultproxy.Proxy).Pause)
}

// TestAnswerLostToACutDatabaseIsSentAgain: as
// TestAnswerLostToAPausedDatabaseIsSentAgain, with the link cut (the
// database crashed) rather than paused: the answer's record fails at
// once, and the attempt is still sent again, once, by another process
// once the lease has run out. On PostgreSQL and MariaDB.
func TestAnswerLostToACutDatabaseIsSentAgain(t *testing.T) {
	answerLostIsSentAgain(t, (*faultproxy.Proxy).Cut)
}

// answerLostIsSentAgain makes fault on process A's database link while
// A's first attempt is at the receiver, and checks that process B sends
// it again once A's lease has run out, and that nothing else is sent.
func answerLostIsSentAgain(t *testing.T, fault func(*faultproxy.Proxy)) {
	for _, db := range serverDatabases {
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
					fault(proxy) // A's answer will find its database gone
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
				t.Fatalf("A's DeliverDue still runs %v after it began, its database link faulty; want it done within its %v lease", lease+time.Second, lease)
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

// TestWorkerIsBoundedWhileItsDatabaseIsPaused holds docs/operating.md
// ("Reliability"): a worker whose database link is paused (a black hole)
// before it claims gives up within its lease, however long the pause
// lasts, and Run keeps trying at every poll rather than hanging in the
// claim or in the purge of old deliveries; once the link is back it
// delivers what was due, once. A real link lost without a reset (a
// database failed over to another host) holds a query until the kernel
// gives up on the connection, many minutes later: only the worker's own
// deadline ends it. On PostgreSQL and MariaDB.
func TestWorkerIsBoundedWhileItsDatabaseIsPaused(t *testing.T) {
	workerDeliversOnceTheLinkIsBack(t, (*faultproxy.Proxy).Pause)
}

// TestWorkerDeliversOnceItsCutDatabaseIsBack: as
// TestWorkerIsBoundedWhileItsDatabaseIsPaused, with the link cut (the
// database crashed, every connection closed): each claim fails, Run
// keeps claiming at every poll, and once the database is back what was
// due is delivered, once. On PostgreSQL and MariaDB.
func TestWorkerDeliversOnceItsCutDatabaseIsBack(t *testing.T) {
	workerDeliversOnceTheLinkIsBack(t, (*faultproxy.Proxy).Cut)
}

// workerDeliversOnceTheLinkIsBack makes fault on a worker's database
// link before it claims an event another process queued, and checks
// that DeliverDue fails within its lease, that Run keeps claiming, and
// that the event is delivered once when the link is back.
func workerDeliversOnceTheLinkIsBack(t *testing.T, fault func(*faultproxy.Proxy)) {
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			defer proxy.Restore()
			rcv := newReceiver(t, http.StatusNoContent)
			const lease = time.Second // the least New allows for a 200 ms Timeout is just over 800 ms
			claims := newFailures("claim failed")
			a := newService(t, webhook.Config{Store: openStore(t, proxied), AllowPrivate: true,
				Timeout: 200 * time.Millisecond, Lease: lease, PollInterval: 50 * time.Millisecond,
				Logger: slog.New(claims)})
			b := newService(t, webhook.Config{Store: openStore(t, direct), AllowPrivate: true})
			if _, err := b.CreateEndpoint(ctx, "prj_a", rcv.srv.URL); err != nil {
				t.Fatal(err)
			}
			if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			fault(proxy)

			done := make(chan error, 1)
			go func() { _, err := a.DeliverDue(ctx); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("DeliverDue over a faulty database link: no error")
				}
			case <-time.After(lease + time.Second):
				proxy.Restore() // lets it end
				<-done
				t.Fatalf("DeliverDue still claims %v after it began, its database link faulty; want it to give up within its %v lease", lease+time.Second, lease)
			}

			// Run: every claim fails, and the claims keep coming.
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- a.Run(runCtx) }()
			halt := sync.OnceFunc(func() { stop(); <-ran })
			defer halt()
			patience := time.After(5 * lease)
			for n := 0; n < 2; n++ {
				select {
				case <-claims.failed:
				case <-patience:
					proxy.Restore()
					t.Fatalf("Run over a faulty database link: %d failed claims within %v; want one at least every two leases (the claim's and the purge's bound)", n, 5*lease)
				}
			}
			proxy.Restore()
			select {
			case <-rcv.arrived:
			case <-time.After(2 * lease):
				t.Fatalf("nothing delivered within %v of the database's return", 2*lease)
			}
			halt() // nothing more is sent
			if got := len(rcv.requests()); got != 1 {
				t.Fatalf("the receiver got %d requests, want the event once", got)
			}
		})
	}
}

// failures is a slog.Handler that signals each line a worker logs whose
// message holds what: "claim failed", "purge failed".
type failures struct {
	what   string
	failed chan struct{}
}

func newFailures(what string) *failures {
	return &failures{what: what, failed: make(chan struct{}, 100)}
}

func (*failures) Enabled(context.Context, slog.Level) bool { return true }
func (h *failures) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.what) {
		h.failed <- struct{}{}
	}
	return nil
}
func (h *failures) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *failures) WithGroup(string) slog.Handler      { return h }

// TestFailedPurgeIsTriedAgainOnceTheDatabaseAnswers: a worker whose
// database link is cut when its hourly purge is due does not wait an
// hour for the next one: once the link is back, a rolled secret whose
// overlap ended is erased from the database within a few polls. On
// PostgreSQL and MariaDB.
func TestFailedPurgeIsTriedAgainOnceTheDatabaseAnswers(t *testing.T) {
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			defer proxy.Restore()
			raw, err := bunopen.Open(ctx, direct)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			const lease = time.Second // the least New allows for a 200 ms Timeout is just over 800 ms
			claims := newFailures("claim failed")
			a := newService(t, webhook.Config{Store: openStore(t, proxied), AllowPrivate: true,
				Timeout: 200 * time.Millisecond, Lease: lease, PollInterval: 50 * time.Millisecond,
				Logger: slog.New(claims)})
			b := newService(t, webhook.Config{Store: openStore(t, direct), AllowPrivate: true})
			e, err := b.CreateEndpoint(ctx, "prj_a", "http://127.0.0.1:1/")
			if err != nil {
				t.Fatal(err)
			}
			const overlap = 500 * time.Millisecond
			rolled := time.Now()
			if _, err := b.RollSecret(ctx, "prj_a", e.ID, overlap); err != nil {
				t.Fatal(err)
			}
			stored := func() string {
				t.Helper()
				var secret string
				if err := raw.NewRaw("SELECT previous_secret FROM webhook_endpoints WHERE id = ?", e.ID).Scan(ctx, &secret); err != nil {
					t.Fatal(err)
				}
				return secret
			}
			time.Sleep(time.Until(rolled.Add(overlap + 100*time.Millisecond)))
			if stored() != e.Secret {
				t.Fatal("the ended secret is not in the row before any purge; the test needs it there")
			}

			// Cut, not paused: a paused statement would reach the
			// database when the pause ends, and erase the secret itself.
			proxy.Cut()
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- a.Run(runCtx) }()
			defer func() { stop(); <-ran }()
			// Two failed claims: the purge due with the first is over.
			for n := 0; n < 2; n++ {
				select {
				case <-claims.failed:
				case <-time.After(5 * lease):
					t.Fatalf("Run over a cut database link: %d failed claims within %v", n, 5*lease)
				}
			}
			proxy.Restore()
			for deadline := time.Now().Add(3 * time.Second); stored() != ""; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the ended secret is still in the database 3 s after its link came back: the failed purge waits an hour")
				}
			}
		})
	}
}

// TestFailedPurgeIsTriedAgainAMinuteLater: a purge that fails after a
// claim the database answered (its link cut meanwhile) is made again a
// minute later on the worker's clock, not an hour later, and erases a
// rolled secret whose overlap has ended. On PostgreSQL and MariaDB.
func TestFailedPurgeIsTriedAgainAMinuteLater(t *testing.T) {
	for _, db := range serverDatabases {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			direct := db.dsn(t)
			proxy, proxied := faultproxy.StartFor(t, direct)
			defer proxy.Restore()
			raw, err := bunopen.Open(ctx, direct)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				proxy.Cut() // after the claim, before the purge
			}))
			t.Cleanup(srv.Close)
			clock := start()
			purges := newFailures("purge failed")
			a := newService(t, webhook.Config{Store: openStore(t, proxied), AllowPrivate: true, Now: clock.Now,
				Timeout: 200 * time.Millisecond, Lease: time.Second, PollInterval: 50 * time.Millisecond,
				Logger: slog.New(purges)})
			b := newService(t, webhook.Config{Store: openStore(t, direct), AllowPrivate: true})
			e, err := b.CreateEndpoint(ctx, "prj_a", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			const overlap = 500 * time.Millisecond
			rolled := time.Now()
			if _, err := b.RollSecret(ctx, "prj_a", e.ID, overlap); err != nil {
				t.Fatal(err)
			}
			if err := b.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			stored := func() string {
				t.Helper()
				var secret string
				if err := raw.NewRaw("SELECT previous_secret FROM webhook_endpoints WHERE id = ?", e.ID).Scan(ctx, &secret); err != nil {
					t.Fatal(err)
				}
				return secret
			}
			time.Sleep(time.Until(rolled.Add(overlap + 100*time.Millisecond)))

			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- a.Run(runCtx) }()
			defer func() { stop(); <-ran }()
			select { // the claim, the attempt, and the purge the cut failed
			case <-purges.failed:
			case <-time.After(5 * time.Second):
				t.Fatal("no purge failed within 5 s of the worker's start; the test needs one to")
			}
			proxy.Restore()
			time.Sleep(300 * time.Millisecond) // polls, with a purge not due yet
			if stored() != e.Secret {
				t.Fatal("the ended secret was erased before a minute had passed; the test needs the purge to have failed")
			}
			clock.Advance(time.Minute)
			for deadline := time.Now().Add(3 * time.Second); stored() != ""; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the ended secret is still in the database a minute after the purge failed (on the worker's clock): the purge waits an hour")
				}
			}
		})
	}
}
