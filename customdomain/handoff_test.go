package customdomain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/webhook"
)

// linkedDatabases are the databases a test can reach through a fault
// proxy, to pause their link.
var linkedDatabases = []struct {
	name string
	dsn  func(testing.TB) string
}{
	{"PostgreSQL", testenv.PostgresSchema},
	{"MariaDB", testenv.MySQLDatabase},
}

// openBun opens dsn's database as a bun store, closed when the test ends.
func openBun(t *testing.T, dsn string) *bunstore.Store {
	t.Helper()
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return bunstore.New(db)
}

// webhookEvents queues the engine's events in the webhook outbox by their
// IDs, within the engine's deadline, as examples/server does, and counts
// the calls.
type webhookEvents struct {
	hooks *webhook.Service
	calls atomic.Int64
}

func (h *webhookEvents) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	h.calls.Add(1)
	return h.hooks.EnqueueOnce(ctx, projectID, ev.ID, ev.Type, ev.CreatedAt, ev.Domain)
}

// pausableOutbox is a deployment whose engine hands its events to a
// webhook outbox through a link the test can pause, on a database whose
// own link (the domains' store, and the outbox as the test reads it)
// stays fine.
type pausableOutbox struct {
	w      *domaintest.World
	store  *bunstore.Store
	hooks  *webhook.Service // the outbox over the healthy link
	events *webhookEvents   // the engine's Events, over the pausable link
	proxy  *faultproxy.Proxy
}

// newPausableOutbox sets up a pausableOutbox on dsn's database, whose
// engine waits timeout for each hand-off: short, so that the test is fast,
// and long against the engine's other work, so that one timeout stands
// out from two.
func newPausableOutbox(t *testing.T, dsn string, timeout time.Duration) *pausableOutbox {
	t.Helper()
	ctx := context.Background()
	proxy, through := faultproxy.StartFor(t, dsn)
	t.Cleanup(proxy.Restore)
	store := openBun(t, dsn)
	if err := bunstore.Migrate(ctx, store.DB()); err != nil {
		t.Fatal(err)
	}
	hooks, err := webhook.New(webhook.Config{Store: store, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	paused, err := webhook.New(webhook.Config{Store: openBun(t, through), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	events := &webhookEvents{hooks: paused}
	w := domaintest.New(t, domaintest.Options{
		Store: store, Projects: projects,
		Config: func(c *customdomain.EngineConfig) { c.Events, c.HandOffTimeout = events, timeout },
	})
	return &pausableOutbox{w: w, store: store, hooks: hooks, events: events, proxy: proxy}
}

// endpoint registers a webhook endpoint of projectID.
func (o *pausableOutbox) endpoint(t *testing.T, projectID string) webhook.Endpoint {
	t.Helper()
	ep, err := o.hooks.CreateEndpoint(context.Background(), projectID, "https://hooks.example.com/domains")
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// paused pauses the outbox's link, runs do and reports how long it took
// and how often it called Events.
func (o *pausableOutbox) paused(do func()) (took time.Duration, calls int64) {
	o.proxy.Pause()
	o.events.calls.Store(0)
	began := time.Now()
	do()
	return time.Since(began), o.events.calls.Load()
}

// restored restores the outbox's link and runs the background round
// after the lease, which hands the waiting events over.
func (o *pausableOutbox) restored(t *testing.T) {
	t.Helper()
	o.proxy.Restore()
	if _, err := o.w.Engine.RunDue(context.Background(), o.w.Clock.Advance(customdomain.OutboxLease)); err != nil {
		t.Fatal(err)
	}
}

// wantDelivered fails unless ep has a delivery of each of want (event
// types, by domain name), once each, and nothing else.
func (o *pausableOutbox) wantDelivered(t *testing.T, projectID string, ep webhook.Endpoint, want map[string][]string) {
	t.Helper()
	ds, err := o.hooks.Deliveries(context.Background(), projectID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, ids := map[string][]string{}, map[string]bool{}
	for _, d := range slices.Backward(ds) { // newest first
		var body struct {
			Type string
			Data struct{ Domain struct{ Name string } }
		}
		if err := json.Unmarshal(d.Payload, &body); err != nil {
			t.Fatal(err)
		}
		got[body.Data.Domain.Name] = append(got[body.Data.Domain.Name], body.Type)
		ids[d.EventID] = true
	}
	if len(ids) != len(ds) || fmt.Sprint(sortedTypes(got)) != fmt.Sprint(sortedTypes(want)) {
		t.Fatalf("%s's endpoint has %d deliveries of %d events: %v; want %v, each once", projectID, len(ds), len(ids), got, want)
	}
}

// sortedTypes sorts each domain's event types, for comparison: the
// outbox orders deliveries by the time of the change, and one change
// may make several events.
func sortedTypes(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = slices.Sorted(slices.Values(v))
	}
	return out
}

// wantOutboxEmpty fails unless the named domains have no events waiting.
func (o *pausableOutbox) wantOutboxEmpty(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if en, err := o.store.DomainByName(context.Background(), name); err != nil || len(en.Outbox) != 0 {
			t.Fatalf("%s's outbox once the link is back: %d events (%v), want none", name, len(en.Outbox), err)
		}
	}
}

// TestHangingEventsHoldARoundForOneTimeout: the webhook outbox's database
// link is paused (a black hole) while a background round moves several
// domains on, each change with its events to hand over. The round checks
// every domain, and waits for Events about one HandOffTimeout in all:
// once a hand-off has run out of time, the round's other events wait in
// their entries instead. Once the link is back, the next round hands every
// event over, each once. Before, each changed domain's hand-off waited
// the whole timeout, and the round took the timeout once per domain.
func TestHangingEventsHoldARoundForOneTimeout(t *testing.T) {
	for _, d := range linkedDatabases {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const timeout = time.Second
			o := newPausableOutbox(t, d.dsn(t), timeout)
			ep := o.endpoint(t, "prj_pro")
			const n = 6
			var names []string
			want := map[string][]string{}
			for i := range n {
				label := fmt.Sprintf("s%d", i)
				name := label + ".example.com"
				if _, _, err := o.w.Engine.Add(ctx, "prj_pro", name); err != nil {
					t.Fatal(err)
				}
				o.w.Set(t, "example.com.", cname(label, domaintest.Target))
				names = append(names, name)
				want[name] = []string{customdomain.EventAdded, customdomain.EventVerified, customdomain.EventActive}
			}

			// A minute later every domain's first check is due, and
			// makes it active: domain.verified and domain.active each.
			took, calls := o.paused(func() {
				if _, err := o.w.Engine.RunDue(ctx, o.w.Clock.Advance(time.Minute)); err != nil {
					t.Fatal(err)
				}
			})
			if bound := 3 * timeout; took >= bound || calls != 1 {
				t.Errorf("the round with the outbox's link paused took %v and called Events %d times; want less than %v (one hand-off timeout of %v, and the checks), and once",
					took.Round(time.Millisecond), calls, bound, timeout)
			}
			for _, name := range names {
				en, err := o.store.DomainByName(ctx, name)
				if err != nil || en.Status != customdomain.StatusActive || len(en.Outbox) != 2 {
					t.Fatalf("%s after the round: %s with %d events waiting (%v); want active, its domain.verified and domain.active waiting", name, en.Status, len(en.Outbox), err)
				}
			}

			o.restored(t)
			o.wantDelivered(t, "prj_pro", ep, want)
			o.wantOutboxEmpty(t, names...)
		})
	}
}

// TestHangingEventsHoldARequestForOneTimeout: the webhook outbox's
// database link is paused while a project claims a name another project
// holds unverified, which removes the holder's domain and adds the
// claimant's, each change with its event. The add succeeds and waits for
// Events about one HandOffTimeout, not one per changed domain; once the
// link is back, the background round hands both events over. Before, the
// add waited the timeout twice.
func TestHangingEventsHoldARequestForOneTimeout(t *testing.T) {
	for _, d := range linkedDatabases {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const timeout = 2 * time.Second
			o := newPausableOutbox(t, d.dsn(t), timeout)
			holder, claimant := o.endpoint(t, "prj_pro"), o.endpoint(t, "prj_business")
			if _, _, err := o.w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			_, _, err := o.w.Engine.Add(ctx, "prj_business", "shop.example.com")
			m := regexp.MustCompile(`name (_petstore-challenge\.shop) and value (petstore-verify=\S+) `).FindStringSubmatch(fmt.Sprint(err))
			if m == nil {
				t.Fatalf("the claimant's first add: %v, want a conflict naming the claim record", err)
			}
			o.w.Set(t, "example.com.", txt(m[1], m[2]))

			took, calls := o.paused(func() {
				if d, created, err := o.w.Engine.Add(ctx, "prj_business", "shop.example.com"); err != nil || !created || d.ProjectID != "prj_business" {
					t.Fatalf("the claim with the outbox's link paused: %s of %s, created %v (%v); want the claimant's new domain", d.Name, d.ProjectID, created, err)
				}
			})
			if bound := 3 * timeout / 2; took >= bound || calls != 1 {
				t.Errorf("the claim with the outbox's link paused took %v and called Events %d times; want less than %v (one hand-off timeout of %v, and the add), and once",
					took.Round(time.Millisecond), calls, bound, timeout)
			}

			o.restored(t)
			o.wantDelivered(t, "prj_pro", holder, map[string][]string{"shop.example.com": {customdomain.EventAdded, customdomain.EventRemoved}})
			o.wantDelivered(t, "prj_business", claimant, map[string][]string{"shop.example.com": {customdomain.EventAdded}})
			o.wantOutboxEmpty(t, "shop.example.com")
		})
	}
}
