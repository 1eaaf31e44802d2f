package customdomain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// refusingEvents refuses every event while down, and records the IDs and
// types it takes otherwise, and how often it was called.
type refusingEvents struct {
	mu    sync.Mutex
	down  bool
	calls int
	taken []string
}

func (r *refusingEvents) DomainEvent(_ context.Context, _ string, ev customdomain.PendingEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.down {
		return errors.New("the outbox's database is down")
	}
	r.taken = append(r.taken, ev.ID+" "+ev.Type)
	return nil
}

func (r *refusingEvents) set(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *refusingEvents) state() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, fmt.Sprint(r.taken)
}

// TestRefusedEventsWaitInTheEntry: an event Events refuses stays in the
// domain's stored entry, with the ID it was made with; the background loop
// hands it over again once its lease is over (not before, and, refused
// again, a minute later), and once it is taken it is gone from the entry.
func TestRefusedEventsWaitInTheEntry(t *testing.T) {
	ctx := context.Background()
	ev := &refusingEvents{down: true}
	w := domaintest.New(t, domaintest.Options{
		Projects: projects,
		Config:   func(c *customdomain.EngineConfig) { c.Events = ev },
	})
	start := w.Clock.Now()
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	stored, err := w.Store.DomainByName(ctx, "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Outbox) != 1 || stored.Outbox[0].Type != customdomain.EventAdded || !stored.OutboxDueAt.Equal(start.Add(10*time.Second)) {
		t.Fatalf("stored outbox %+v due %s, want the domain.added event due in 10 s", stored.Outbox, stored.OutboxDueAt)
	}
	id := stored.Outbox[0].ID

	for _, step := range []struct {
		at    time.Duration
		down  bool
		calls int
		taken string
	}{
		{9 * time.Second, true, 1, "[]"},  // within the lease: not again
		{10 * time.Second, true, 2, "[]"}, // refused again: next in a minute
		// The domain's first DNS check is a change too: its write hands
		// over what waits in the entry.
		{60 * time.Second, true, 3, "[]"},
		{69 * time.Second, false, 3, "[]"}, // not yet
		{70 * time.Second, false, 4, "[" + id + " domain.added]"},
		{2 * time.Hour, false, 4, "[" + id + " domain.added]"}, // taken: never again
	} {
		ev.set(step.down)
		w.Clock.Set(start.Add(step.at))
		if _, err := w.Engine.RunDue(ctx, w.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		if calls, taken := ev.state(); calls != step.calls || taken != step.taken {
			t.Fatalf("at +%s: %d calls, taken %s; want %d, %s", step.at, calls, taken, step.calls, step.taken)
		}
	}
	stored, err = w.Store.DomainByName(ctx, "shop.example.com")
	if err != nil || len(stored.Outbox) != 0 || !stored.OutboxDueAt.IsZero() {
		t.Fatalf("outbox once taken: %+v due %s (%v), want empty", stored.Outbox, stored.OutboxDueAt, err)
	}
}

// writingProjects is the platform's side of a deployment whose other
// processes write a domain while each plan lookup of this one is under
// way: every call of Project lets write run first, as a slow lookup
// would let a concurrent background check land.
type writingProjects struct {
	customdomain.Projects
	write func()
}

func (p writingProjects) Project(ctx context.Context, id string) (customdomain.Project, error) {
	p.write()
	return p.Projects.Project(ctx, id)
}

// TestVerifyWhileTheViewIsLookedUp: the plan lookup the view of a change
// needs (its events carry the domain as the dashboard shows it) is slow,
// and during each one another process writes the domain. Verify still
// stores the change, and its events carry the domain as stored: no I/O
// runs between the optimistic loop's read and its write, so the write
// during the lookup is read before the change is written. Before, the
// view was looked up inside the loop, each try's write lost to the write
// made during its lookup, and Verify answered conflict.
func TestVerifyWhileTheViewIsLookedUp(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			store := s.open(t)
			ev := &events{}
			writes := 0
			landWrite := func() { // another process's background check of shop.example.com
				en, err := store.DomainByName(ctx, "shop.example.com")
				if err != nil {
					return // not added yet
				}
				en.CheckedAt = en.CheckedAt.Add(time.Second)
				if _, err := store.UpdateDomain(ctx, en); err != nil {
					t.Errorf("the concurrent write: %v", err)
				}
				writes++
			}
			told := &viewsTold{}
			w := domaintest.New(t, domaintest.Options{
				Store: store, Projects: writingProjects{Projects: projects, write: landWrite},
				Config: func(c *customdomain.EngineConfig) {
					c.Events = eventsTo{ev, told}
					c.Diagnosers = []customdomain.Diagnoser{statusDiagnoser{}}
				},
			})
			if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			w.Set(t, "example.com.", libdns.CNAME{Name: "shop", TTL: time.Hour, Target: domaintest.Target + "."})
			d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com")
			if err != nil || d.Status != customdomain.StatusActive {
				t.Fatalf("Verify with %d writes landing during its plan lookups = %s, %v; want active", writes, d.Status, err)
			}
			if got, want := fmt.Sprint(ev.take()), "[prj_pro domain.added shop.example.com pending prj_pro domain.verified shop.example.com active prj_pro domain.active shop.example.com active]"; got != want {
				t.Fatalf("events %s, want %s", got, want)
			}
			// The Diagnosers were asked about the view each event carries.
			if n := len(told.domains()); n != 3 {
				t.Fatalf("%d events told, want 3", n)
			}
			for _, d := range told.domains() {
				if got, want := codes(d.Diagnosis.Findings), "STATUS_"+string(d.Status); got != want {
					t.Fatalf("a %s domain's event has the findings %s, want %s", d.Status, got, want)
				}
			}
		})
	}
}

// statusDiagnoser finds STATUS_<status> in every domain it is asked about.
type statusDiagnoser struct{}

func (statusDiagnoser) Diagnose(_ context.Context, d customdomain.Domain) []customdomain.Finding {
	return []customdomain.Finding{{Code: "STATUS_" + string(d.Status)}}
}

// eventsTo tells every event to each of its ports in turn.
type eventsTo []customdomain.Events

func (to eventsTo) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	for _, e := range to {
		if err := e.DomainEvent(ctx, projectID, ev); err != nil {
			return err
		}
	}
	return nil
}

// viewsTold keeps the domain each event carries.
type viewsTold struct {
	mu sync.Mutex
	ds []customdomain.Domain
}

func (v *viewsTold) DomainEvent(_ context.Context, _ string, ev customdomain.PendingEvent) error {
	var d customdomain.Domain
	if err := json.Unmarshal(ev.Domain, &d); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ds = append(v.ds, d)
	return nil
}

func (v *viewsTold) domains() []customdomain.Domain {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.ds)
}

// TestHandOffTimeoutIsBelowTheLease: New takes a HandOffTimeout below
// the outbox lease (0 is the default), and refuses one that is negative
// or as long as the lease, within which the engine that stored a change
// must also record that it handed the events over.
func TestHandOffTimeoutIsBelowTheLease(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		ok      bool
	}{
		{0, true},
		{time.Millisecond, true},
		{customdomain.OutboxLease - time.Millisecond, true},
		{customdomain.OutboxLease, false},
		{time.Minute, false},
		{-time.Second, false},
	} {
		cfg := domaintest.New(t, domaintest.Options{}).Config()
		cfg.HandOffTimeout = tc.timeout
		if _, err := customdomain.New(cfg); (err == nil) != tc.ok {
			t.Errorf("New with HandOffTimeout %s: %v, want ok=%v", tc.timeout, err, tc.ok)
		}
	}
}

// TestOutboxKeepsTheNewestEvents: while Events refuses every event, a
// domain whose record flaps keeps at most MaxOutbox events in its entry,
// the newest: each write that drops older ones says so at warn, once.
// Once Events is back it is handed those, ending with the domain's
// latest change.
func TestOutboxKeepsTheNewestEvents(t *testing.T) {
	ctx := context.Background()
	ev := &refusingEvents{down: true}
	var logs testenv.Buffer
	w := domaintest.New(t, domaintest.Options{
		Projects: projects,
		Config: func(c *customdomain.EngineConfig) {
			c.Events = ev
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		},
	})
	const name = "shop.example.com"
	w.Set(t, "example.com.", cname("shop", target))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", name); err != nil {
		t.Fatal(err)
	}
	events := 1
	verify := func(to string, want customdomain.Status) {
		t.Helper()
		w.Clock.Set(w.Clock.Now().Add(time.Minute))
		w.Set(t, "example.com.", cname("shop", to))
		if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != want {
			t.Fatalf("Verify = %s, %v; want %s", d.Status, err, want)
		}
	}
	verify(target, customdomain.StatusActive) // domain.verified, domain.active
	events += 2
	for events <= customdomain.MaxOutbox+10 {
		verify("elsewhere.example.net", customdomain.StatusMisconfigured)
		verify(target, customdomain.StatusActive)
		events += 2
	}
	stored, err := w.Store.DomainByName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Outbox) != customdomain.MaxOutbox {
		t.Fatalf("%d events waiting of the %d made, want the newest %d", len(stored.Outbox), events, customdomain.MaxOutbox)
	}
	last := stored.Outbox[len(stored.Outbox)-1]
	if last.Type != customdomain.EventActive || !last.CreatedAt.Equal(w.Clock.Now()) {
		t.Fatalf("the newest waiting event is %s at %s, want the last change's domain.active at %s", last.Type, last.CreatedAt, w.Clock.Now())
	}
	if got, want := strings.Count(logs.String(), "level=WARN msg=\"domain events dropped"), events-customdomain.MaxOutbox; got != want {
		t.Fatalf("%d warnings of dropped events, want %d, one per write that dropped one:\n%s", got, want, logs.String())
	}

	ev.set(false)
	w.Clock.Set(w.Clock.Now().Add(time.Hour))
	if _, err := w.Engine.RunDue(ctx, w.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range stored.Outbox {
		want = append(want, e.ID+" "+e.Type)
	}
	if _, taken := ev.state(); taken != fmt.Sprint(want) {
		t.Fatalf("handed over %s once Events was back, want the %d kept: %s", taken, customdomain.MaxOutbox, want)
	}
}
