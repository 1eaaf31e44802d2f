package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/webhook"
)

// TestReplicasWithSkewedClocksNeverSendAnAttemptTwiceAtOnce: two
// processes on one shared store, one clock two minutes ahead and the
// other two minutes behind, and a receiver that holds each attempt open.
// The receiver never has the same event in flight twice, and every event
// is delivered: leases end on the database's clock, not on the clock of
// whichever process judges them. On a SQLite file, PostgreSQL and
// MariaDB.
func TestReplicasWithSkewedClocksNeverSendAnAttemptTwiceAtOnce(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			var mu sync.Mutex
			inFlight := map[string]int{}  // event id: attempts open now
			delivered := map[string]int{} // event id: attempts answered
			var overlaps []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var ev struct{ ID string }
				_ = json.NewDecoder(r.Body).Decode(&ev)
				mu.Lock()
				if inFlight[ev.ID] > 0 {
					overlaps = append(overlaps, ev.ID)
				}
				inFlight[ev.ID]++
				mu.Unlock()
				time.Sleep(500 * time.Millisecond) // an attempt in flight, answered within the timeout
				mu.Lock()
				inFlight[ev.ID]--
				delivered[ev.ID]++
				mu.Unlock()
			}))
			t.Cleanup(srv.Close)
			cfg := webhook.Config{Timeout: time.Second, Lease: 5 * time.Second}
			ahead, behind := skewedService(t, dsn, 2*time.Minute, cfg), skewedService(t, dsn, -2*time.Minute, cfg)
			ep, err := behind.CreateEndpoint(ctx, "prj_a", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			// Enqueued behind, the events are due for both processes.
			const events = 8
			for range events {
				if err := behind.Enqueue(ctx, "prj_a", webhook.TypeDomainVerified, map[string]string{"name": "a.example.com"}); err != nil {
					t.Fatal(err)
				}
			}
			allRecorded := allSucceeded(t, behind, "prj_a", ep.ID, events)
			var done atomic.Bool
			var wg sync.WaitGroup
			for i, svc := range []*webhook.Service{behind, ahead} {
				wg.Go(func() {
					// The one behind claims first; the one ahead polls
					// while those attempts are in flight.
					time.Sleep(time.Duration(i) * 100 * time.Millisecond)
					for !done.Load() {
						if n, _ := svc.DeliverDue(ctx); n == 0 {
							time.Sleep(100 * time.Millisecond) // a poll interval
						}
					}
				})
			}
			for deadline := time.Now().Add(60 * time.Second); !allRecorded(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) { // a hang guard
					break
				}
			}
			done.Store(true)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(overlaps) > 0 {
				t.Errorf("the receiver had these events in flight twice at once: %v (answers per event: %v)", overlaps, delivered)
			}
			if len(delivered) != events {
				t.Errorf("the receiver got %d distinct events, want %d", len(delivered), events)
			}
			if !allRecorded() {
				t.Error("not every delivery was recorded as succeeded within 60 s")
			}
		})
	}
}

// TestEventFromAClockAheadIsDueAtOnceForAClockBehind: an event enqueued
// by a process whose clock is four minutes ahead of the only worker's is
// delivered at the worker's next poll, not four minutes later: due
// times are on the database's clock. On a SQLite file, PostgreSQL and
// MariaDB.
func TestEventFromAClockAheadIsDueAtOnceForAClockBehind(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			rcv := newReceiver(t, 200)
			ahead, behind := skewedService(t, dsn, 2*time.Minute, webhook.Config{}), skewedService(t, dsn, -2*time.Minute, webhook.Config{})
			if _, err := ahead.CreateEndpoint(ctx, "prj_a", rcv.srv.URL); err != nil {
				t.Fatal(err)
			}
			if err := ahead.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			if n := deliverDue(t, behind); n != 1 {
				t.Fatalf("the worker behind claimed %d deliveries, want the event just enqueued", n)
			}
			if got := len(rcv.requests()); got != 1 {
				t.Fatalf("the receiver got %d requests, want 1", got)
			}
		})
	}
}

// TestReplicaDaysAheadRetriesAFailedFirstAttempt: a worker whose clock is
// two days ahead of the process that enqueued an event makes its first
// attempt, which the receiver answers 500, and schedules a retry 30 s
// later, as any worker would: the 24 hours of retries (Config.RetryFor)
// run on the database's clock from the enqueue, so a clock ahead does
// not give the delivery up at its first failure. On a SQLite file,
// PostgreSQL and MariaDB.
func TestReplicaDaysAheadRetriesAFailedFirstAttempt(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			rcv := newReceiver(t, 500)
			onTime, ahead := skewedService(t, dsn, 0, webhook.Config{}), skewedService(t, dsn, 48*time.Hour, webhook.Config{})
			ep, err := onTime.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if err := onTime.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			if n := deliverDue(t, ahead); n != 1 {
				t.Fatalf("the worker ahead attempted %d deliveries, want 1", n)
			}
			ds, err := onTime.Deliveries(ctx, "prj_a", ep.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries %+v, %v; want one", ds, err)
			}
			if d := ds[0]; d.State != webhook.StatePending || d.Attempts != 1 {
				t.Fatalf("after a first attempt answered 500 by a worker 48 h ahead, the delivery is %s after %d attempts, want pending after 1: it was given up on that worker's clock", d.State, d.Attempts)
			}
		})
	}
}

// TestReplicaDaysBehindGivesUpOnceRetryForHasPassed: with a RetryFor of
// 32 s and retries 30 s apart, a worker whose clock is two days behind the
// process that enqueued the events, facing a receiver that answers 500,
// schedules a retry of an event it attempts at once (the retry falls
// within 32 s of the enqueue) and gives up one it attempts 4 s after the
// enqueue (the retry would fall 34 s after it): RetryFor runs on the
// database's clock, not from a CreatedAt two days ahead of the worker's.
// On a SQLite file, PostgreSQL and MariaDB.
func TestReplicaDaysBehindGivesUpOnceRetryForHasPassed(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			rcv := newReceiver(t, 500)
			cfg := webhook.Config{RetryFor: 32 * time.Second} // newService's jitter: retries exactly 30 s apart
			ahead, behind := skewedService(t, dsn, 24*time.Hour, cfg), skewedService(t, dsn, -24*time.Hour, cfg)
			ep, err := ahead.CreateEndpoint(ctx, "prj_a", rcv.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			state := func(eventType string) webhook.Delivery {
				t.Helper()
				ds, err := ahead.Deliveries(ctx, "prj_a", ep.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds {
					if d.Type == eventType {
						return d
					}
				}
				t.Fatalf("no %s delivery in %+v", eventType, ds)
				return webhook.Delivery{}
			}
			if err := ahead.Enqueue(ctx, "prj_a", webhook.TypeDomainVerified, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			if n := deliverDue(t, behind); n != 1 {
				t.Fatalf("the worker behind attempted %d deliveries, want 1", n)
			}
			if d := state(webhook.TypeDomainVerified); d.State != webhook.StatePending || d.Attempts != 1 {
				t.Fatalf("an event attempted at once is %s after %d attempts, want pending after 1: its retry falls within RetryFor", d.State, d.Attempts)
			}
			if err := ahead.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(4 * time.Second) // the delivery's age on the database's clock
			if n := deliverDue(t, behind); n != 1 {
				t.Fatalf("the worker behind attempted %d deliveries, want the second event's only", n)
			}
			if d := state(webhook.TypeDomainActive); d.State != webhook.StateFailed || d.Attempts != 1 {
				t.Fatalf("an event attempted 4 s after its enqueue is %s after %d attempts, want failed after 1: its retry would fall 34 s after the enqueue, past RetryFor, on the database's clock", d.State, d.Attempts)
			}
		})
	}
}

// skewedService is a worker with cfg's settings on the database at dsn
// (a store of its own, as another process has), whose clock is skew off
// the real one.
func skewedService(t *testing.T, dsn string, skew time.Duration, cfg webhook.Config) *webhook.Service {
	cfg.Store, cfg.AllowPrivate = openStore(t, dsn), true
	cfg.Now = func() time.Time { return time.Now().Add(skew) }
	return newService(t, cfg)
}

// TestReplicaDaysAheadKeepsFinishedDeliveriesForTheirRetention: a
// delivery that succeeded just now stays in the endpoint's history when
// a replica whose clock is 8 days ahead makes its hourly purge: the 7
// days of retention run on the database's clock, from when it stored the
// event, not on the purging replica's. On a SQLite file, PostgreSQL and
// MariaDB.
func TestReplicaDaysAheadKeepsFinishedDeliveriesForTheirRetention(t *testing.T) {
	t.Parallel()
	for _, db := range sharedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := db.dsn(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			t.Cleanup(srv.Close)
			now := skewedService(t, dsn, 0, webhook.Config{})
			calls := &callLog{Store: openStore(t, dsn)}
			ahead := newService(t, webhook.Config{Store: calls, AllowPrivate: true, PollInterval: 20 * time.Millisecond,
				Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
			ep, err := now.CreateEndpoint(ctx, "prj_a", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if err := now.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			if n := deliverDue(t, now); n != 1 {
				t.Fatalf("DeliverDue attempted %d deliveries, want 1", n)
			}
			// The replica ahead purges on its first poll; a claim after
			// the purge says it is over.
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- ahead.Run(runCtx) }()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				calls.mu.Lock()
				purged := slices.Index(calls.calls, "purge")
				over := purged >= 0 && len(calls.calls) > purged+1
				calls.mu.Unlock()
				if over {
					break
				}
				if time.Now().After(deadline) {
					stop()
					t.Fatal("the replica ahead made no purge within 5 s")
				}
			}
			stop()
			<-ran
			ds, err := now.Deliveries(ctx, "prj_a", ep.ID)
			if err != nil || len(ds) != 1 || ds[0].State != webhook.StateSucceeded {
				t.Fatalf("deliveries after the purge of a replica 8 days ahead: %+v, %v; want the one that succeeded just now, kept for 7 days", ds, err)
			}
		})
	}
}
