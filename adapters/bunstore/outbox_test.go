package bunstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/webhook"
	"github.com/uptrace/bun"
)

// diedEvents is the Events port of a process that dies right after a
// domain's change is stored, before it queues the change's event.
type diedEvents struct{}

func (diedEvents) DomainEvent(context.Context, string, customdomain.PendingEvent) error {
	return errors.New("the process died before queuing the event")
}

// hookEvents queues the engine's events for webhooks by their IDs, as
// examples/server does, waiting at most a second for the database.
type hookEvents struct{ hooks *webhook.Service }

func (h hookEvents) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return h.hooks.EnqueueOnce(ctx, projectID, ev.ID, ev.Type, ev.CreatedAt, ev.Domain)
}

// newHooks returns a webhook service over store, delivering nothing.
func newHooks(t *testing.T, store webhook.Store) *webhook.Service {
	t.Helper()
	hooks, err := webhook.New(webhook.Config{Store: store, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// hooksWithEndpoint returns a webhook service over store and the
// endpoint it registered for prj_pro.
func hooksWithEndpoint(t *testing.T, store webhook.Store) (*webhook.Service, webhook.Endpoint) {
	t.Helper()
	hooks := newHooks(t, store)
	ep, err := hooks.CreateEndpoint(context.Background(), "prj_pro", "https://hooks.example.com/domains")
	if err != nil {
		t.Fatal(err)
	}
	return hooks, ep
}

var proProject = customdomain.Project{ID: "prj_pro", Plan: petstore.PlanPro, Deployed: true}

// wantOneAdded fails unless the endpoint has exactly one delivery, the
// domain.added event of shop.example.com, and returns its event ID.
func wantOneAdded(t *testing.T, hooks *webhook.Service, ep webhook.Endpoint) string {
	t.Helper()
	ds, err := hooks.Deliveries(context.Background(), "prj_pro", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("%d deliveries, want the one domain.added: %+v", len(ds), ds)
	}
	var body struct {
		ID, Type string
		Data     struct{ Domain struct{ Name, Status string } }
	}
	if err := json.Unmarshal(ds[0].Payload, &body); err != nil || body.Type != customdomain.EventAdded ||
		body.ID != ds[0].EventID || body.Data.Domain.Name != "shop.example.com" || body.Data.Domain.Status != "pending" {
		t.Fatalf("delivery %s (%v), want domain.added of shop.example.com, pending", ds[0].Payload, err)
	}
	return ds[0].EventID
}

// wantAddedVerifiedActive fails unless the endpoint has three deliveries:
// domain.added, domain.verified and domain.active, 10 seconds after the
// change that made the last two.
func wantAddedVerifiedActive(t *testing.T, hooks *webhook.Service, ep webhook.Endpoint) {
	t.Helper()
	ds, err := hooks.Deliveries(context.Background(), "prj_pro", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range ds {
		got[d.Type] = true
	}
	if len(ds) != 3 || !got[customdomain.EventAdded] || !got[customdomain.EventVerified] || !got[customdomain.EventActive] {
		t.Fatalf("10 seconds after the change the endpoint has %d deliveries %v, want domain.added, domain.verified and domain.active", len(ds), got)
	}
}

// addedByADeadProcess is a bun store on db with a webhook endpoint of
// prj_pro, where a process added shop.example.com and died before it
// handed over the event (diedEvents).
func addedByADeadProcess(t *testing.T, db *bun.DB) (*bunstore.Store, *webhook.Service, webhook.Endpoint, *domaintest.World) {
	t.Helper()
	store := bunstore.New(db)
	hooks, ep := hooksWithEndpoint(t, store)
	w := domaintest.New(t, domaintest.Options{
		Store: store, Projects: domaintest.NewProjects(proProject),
		Config: func(c *customdomain.EngineConfig) { c.Events = diedEvents{} },
	})
	if _, created, err := w.Engine.Add(context.Background(), "prj_pro", "shop.example.com"); err != nil || !created {
		t.Fatalf("Add = %v, %v", created, err)
	}
	return store, hooks, ep, w
}

// TestDomainEventOfADeadProcessIsQueuedOnceByTheOthers: a process that
// stores a domain's change and dies before queuing its event leaves the
// event in the stored entry; two other processes on the same database
// both run their background loop after it, and the project's endpoint
// gets the event once, with the change's domain.
func TestDomainEventOfADeadProcessIsQueuedOnceByTheOthers(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, hooks, ep, w := addedByADeadProcess(t, b.open(t))
			if ds, err := hooks.Deliveries(ctx, "prj_pro", ep.ID); err != nil || len(ds) != 0 {
				t.Fatalf("deliveries before the others run = %d (%v), want none", len(ds), err)
			}

			// Past the dead process's hand-off lease, before the domain's
			// first DNS check: the events alone are due.
			w.Clock.Advance(30 * time.Second)
			var wg sync.WaitGroup
			for range 2 {
				other := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = hookEvents{hooks} })
				wg.Go(func() {
					if _, err := other.RunDue(ctx, w.Clock.Now()); err != nil {
						t.Errorf("RunDue: %v", err)
					}
				})
			}
			wg.Wait()
			id := wantOneAdded(t, hooks, ep)

			again := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = hookEvents{hooks} })
			if _, err := again.RunDue(ctx, w.Clock.Advance(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if got := wantOneAdded(t, hooks, ep); got != id {
				t.Fatalf("event %s delivered, then %s", id, got)
			}
			if due, err := store.DueOutboxes(ctx, w.Clock.Now().Add(24*time.Hour), 10); err != nil || len(due) != 0 {
				t.Fatalf("entries with events still to hand over = %d (%v), want none", len(due), err)
			}
		})
	}
}

// strikeAfterCreate is a domain store whose CreateDomain, once the new
// entry is stored, strikes the database link with fault, the first time:
// the change stands and the queuing of its event meets the fault.
type strikeAfterCreate struct {
	customdomain.Store
	once  sync.Once
	fault func()
}

func (s *strikeAfterCreate) CreateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	stored, err := s.Store.CreateDomain(ctx, e)
	s.once.Do(s.fault)
	return stored, err
}

// TestDomainEventQueuedThroughADatabaseFault: the database link is cut,
// paused or slowed the moment a domain's change is stored, so queuing its
// event fails; once the database is back, a process's background loop
// queues it, and the endpoint gets it once. A paused link delivers the
// held write when it is restored, which lands beside the loop's (once,
// not twice: the same event ID); a pause that ends in a cut loses it.
func TestDomainEventQueuedThroughADatabaseFault(t *testing.T) {
	for _, b := range linkedBackends {
		for _, fault := range []string{"cut", "pause", "pause-then-cut", "slow"} {
			t.Run(b.name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				directDB, proxied, proxy := throughProxy(t, b.dsn(t))
				t.Cleanup(proxy.Restore)
				strike := map[string]func(){"cut": proxy.Cut, "pause": proxy.Pause, "pause-then-cut": proxy.Pause, "slow": func() { proxy.SetLatency(700 * time.Millisecond) }}[fault]
				hooks, ep := hooksWithEndpoint(t, proxied)
				w := domaintest.New(t, domaintest.Options{
					Store: &strikeAfterCreate{Store: proxied, fault: strike}, Projects: domaintest.NewProjects(proProject),
					Config: func(c *customdomain.EngineConfig) { c.Events = hookEvents{hooks} },
				})
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, created, err := w.Engine.Add(actx, "prj_pro", "shop.example.com")
				cancel()
				if err != nil || !created {
					t.Fatalf("Add = %v, %v; the change is stored before the fault", created, err)
				}
				if fault == "pause-then-cut" {
					proxy.Cut() // what the pause held never reaches the database
				}
				proxy.Restore()

				direct := bunstore.New(directDB) // another process, or this one once the link is back
				healthy := newHooks(t, direct)
				other := w.Replica(t, func(c *customdomain.EngineConfig) {
					c.Store, c.Events = direct, hookEvents{healthy}
				})
				if _, err := other.RunDue(ctx, w.Clock.Advance(30*time.Second)); err != nil {
					t.Fatal(err)
				}
				id := wantOneAdded(t, healthy, ep)
				if _, err := other.RunDue(ctx, w.Clock.Advance(time.Hour)); err != nil {
					t.Fatal(err)
				}
				if got := wantOneAdded(t, healthy, ep); got != id {
					t.Fatalf("event %s delivered, then %s", id, got)
				}
			})
		}
	}
}

// TestNewEventsAreDueAfterTheLeaseWhileOlderOnesWait: a domain's earlier
// event has waited for hours (the webhook outbox's database was down), so
// the background loop tries it again only every 15 minutes; then the
// outbox is back, and a process stores a new change of the domain and
// dies before handing its events over. The other processes hand them
// over 10 seconds after the change, as for any change, not when the old
// event's next try was due. Before, the change kept the entry's due time,
// and its events waited with the old one.
func TestNewEventsAreDueAfterTheLeaseWhileOlderOnesWait(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, hooks, ep, w := addedByADeadProcess(t, b.open(t))
			// Every process's hand-off fails for three hours.
			if _, err := w.Engine.RunDue(ctx, w.Clock.Advance(3*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if en, err := store.DomainByName(ctx, "shop.example.com"); err != nil || len(en.Outbox) != 1 || !en.OutboxDueAt.Equal(w.Clock.Now().Add(15*time.Minute)) {
				t.Fatalf("after three hours refused: outbox %d due %s (%v), want the added event due in 15 minutes", len(en.Outbox), en.OutboxDueAt, err)
			}

			// The outbox is back; this process verifies the domain and dies.
			w.Set(t, "example.com.", libdns.CNAME{Name: "shop", TTL: time.Hour, Target: domaintest.Target + "."})
			if d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive {
				t.Fatalf("Verify = %s (%v), want active", d.Status, err)
			}
			other := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = hookEvents{hooks} })
			if _, err := other.RunDue(ctx, w.Clock.Advance(10*time.Second)); err != nil {
				t.Fatal(err)
			}
			wantAddedVerifiedActive(t, hooks, ep)
		})
	}
}

// changeDuringHandOff is the Events port of a process whose hand-off of a
// domain's waiting events is raced, once, by another process storing a
// new change of the domain (during, before the hand-off is recorded).
type changeDuringHandOff struct {
	hookEvents
	once   sync.Once
	change func()
}

func (c *changeDuringHandOff) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	c.once.Do(c.change)
	return c.hookEvents.DomainEvent(ctx, projectID, ev)
}

// TestNewEventsStayDueWhenAHandOffOfOlderOnesEnds: a process hands over
// a domain's event that waited for hours, while another stores a new
// change of the domain and dies before handing its events over. Recording
// the hand-off moves the older events' next try on, but not that of the
// new ones: another process hands them over 10 seconds after their
// change. Before, they waited for the older event's next try, 15 minutes
// later.
func TestNewEventsStayDueWhenAHandOffOfOlderOnesEnds(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, hooks, ep, w := addedByADeadProcess(t, b.open(t))
			w.Clock.Advance(3 * time.Hour) // the event waited, refused, for three hours
			w.Set(t, "example.com.", libdns.CNAME{Name: "shop", TTL: time.Hour, Target: domaintest.Target + "."})
			handing := &changeDuringHandOff{hookEvents: hookEvents{hooks}, change: func() {
				// w.Engine's process verifies the domain and dies.
				if d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive {
					t.Errorf("Verify = %s (%v), want active", d.Status, err)
				}
			}}
			first := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = handing })
			if _, err := first.RunDue(ctx, w.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			other := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = hookEvents{hooks} })
			if _, err := other.RunDue(ctx, w.Clock.Advance(10*time.Second)); err != nil {
				t.Fatal(err)
			}
			wantAddedVerifiedActive(t, hooks, ep)
		})
	}
}

// ctxEvents queues the engine's events for webhooks by their IDs with the
// engine's ctx as it is: the Events port of a process that leaves the
// bound on the wait for its database to the engine.
type ctxEvents struct{ hooks *webhook.Service }

func (h ctxEvents) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	return h.hooks.EnqueueOnce(ctx, projectID, ev.ID, ev.Type, ev.CreatedAt, ev.Domain)
}

// TestPausedEventsDoNotHoldUpTheBackgroundChecks: the webhook outbox's
// database link is paused (a black hole) while a domain's event waits in
// its entry and another domain's record has just been set right. A
// background round still checks DNS and moves the pending domain on, and
// returns within a bound, its hand-offs given up; once the link is back a
// later round hands every event over, and the endpoint gets each once,
// the waiting one with the ID it was stored with. Before, the round
// handed the waiting event over first, with no deadline, and hung for as
// long as the link was paused: no domain was checked.
func TestPausedEventsDoNotHoldUpTheBackgroundChecks(t *testing.T) {
	for _, b := range linkedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			directDB, proxied, proxy := throughProxy(t, b.dsn(t))
			t.Cleanup(proxy.Restore)
			store := bunstore.New(directDB) // the domains' store: its link is fine
			healthy, ep := hooksWithEndpoint(t, store)
			w := domaintest.New(t, domaintest.Options{
				Store: store, Projects: domaintest.NewProjects(proProject),
				Config: func(c *customdomain.EngineConfig) { c.Events = hookEvents{healthy} },
			})
			if _, _, err := w.Engine.Add(ctx, "prj_pro", "www.example.com"); err != nil {
				t.Fatal(err)
			}
			// 40 s later a process adds shop.example.com and dies before
			// it hands its event over.
			w.Clock.Advance(40 * time.Second)
			died := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = diedEvents{} })
			if _, _, err := died.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			waiting, err := store.DomainByName(ctx, "shop.example.com")
			if err != nil || len(waiting.Outbox) != 1 {
				t.Fatalf("shop.example.com's outbox: %+v (%v), want its domain.added", waiting.Outbox, err)
			}
			w.Set(t, "example.com.", libdns.CNAME{Name: "www", TTL: time.Hour, Target: domaintest.Target + "."})

			// At +70 s the waiting event is due and so is www's first
			// check (shop's is not yet); the outbox's link is paused.
			runner := w.Replica(t, func(c *customdomain.EngineConfig) { c.Events = ctxEvents{newHooks(t, proxied)} })
			proxy.Pause()
			done := make(chan error, 1)
			go func() {
				_, err := runner.RunDue(ctx, w.Clock.Advance(30*time.Second))
				done <- err
			}()
			const bound = 20 * time.Second // two hand-offs given up, with room
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(bound):
				proxy.Restore() // lets it end
				<-done
				t.Fatalf("RunDue still ran %v after it began, with the webhook outbox's database paused; want it done within that", bound)
			}
			if d, err := store.DomainByName(ctx, "www.example.com"); err != nil || d.Status != customdomain.StatusActive {
				t.Fatalf("www.example.com after the round: %s (%v), want active: its DNS check ran", d.Status, err)
			}

			proxy.Restore()
			if _, err := runner.RunDue(ctx, w.Clock.Advance(time.Hour)); err != nil {
				t.Fatal(err)
			}
			ds, err := healthy.Deliveries(ctx, "prj_pro", ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, d := range ds {
				seen[d.EventID]++
			}
			if len(ds) != 4 || len(seen) != 4 || seen[waiting.Outbox[0].ID] != 1 {
				t.Fatalf("the endpoint has %d deliveries of %d events, the waiting event's %d times; want www's domain.added, verified and active and shop's domain.added (ID %s), each once", len(ds), len(seen), seen[waiting.Outbox[0].ID], waiting.Outbox[0].ID)
			}
			for _, name := range []string{"www.example.com", "shop.example.com"} {
				if en, err := store.DomainByName(ctx, name); err != nil || len(en.Outbox) != 0 {
					t.Fatalf("%s's outbox once the link is back: %d events (%v), want none", name, len(en.Outbox), err)
				}
			}
		})
	}
}
