package customdomain_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
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
