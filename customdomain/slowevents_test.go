package customdomain_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// slowEvents takes every event, each after delay (or when ctx ends first,
// refusing it), and records the IDs it took and how often it was called.
type slowEvents struct {
	mu    sync.Mutex
	delay time.Duration
	calls int
	taken map[string]int
}

func (s *slowEvents) DomainEvent(ctx context.Context, _ string, ev customdomain.PendingEvent) error {
	s.mu.Lock()
	s.calls++
	delay := s.delay
	s.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken[ev.ID]++
	return nil
}

func (s *slowEvents) setDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// callsSince returns how often DomainEvent was called, and resets it.
func (s *slowEvents) callsSince() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.calls
	s.calls = 0
	return n
}

// TestSlowEventsAreNotWaitedForOnEveryRequest: Events answers, but just
// inside HandOffTimeout (its database is slow, not paused). The first
// request that hands it an event waits for it; the engine then remembers
// that it is slow, and later requests leave their events in their entries
// instead of waiting nearly the whole timeout each. The background round
// hands them over (one slow hand-off per round, so the round is not held
// up once per event), and once Events is quick again requests hand their
// events over themselves. Every event is taken exactly once. Before, each
// add waited nearly the whole timeout, and so did each event of a round.
func TestSlowEventsAreNotWaitedForOnEveryRequest(t *testing.T) {
	ctx := context.Background()
	const timeout = 400 * time.Millisecond
	slow := timeout * 9 / 10 // answered, just in time
	ev := &slowEvents{delay: slow, taken: map[string]int{}}
	w := domaintest.New(t, domaintest.Options{
		Projects: projects,
		Config:   func(c *customdomain.EngineConfig) { c.Events, c.HandOffTimeout = ev, timeout },
	})

	const n = 5
	began := time.Now()
	for i := range n {
		if _, _, err := w.Engine.Add(ctx, "prj_pro", fmt.Sprintf("s%d.example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(began)
	if calls := ev.callsSince(); calls != 1 || took >= 2*slow {
		t.Errorf("%d adds with Events answering in %v called it %d times and took %v; want once, and less than %v (one slow hand-off)",
			n, slow, calls, took.Round(time.Millisecond), 2*slow)
	}

	// The background round, after the lease, finds n-1 entries with an
	// event waiting: one slow hand-off ends the round's hand-offs.
	began = time.Now()
	if _, err := w.Engine.RunDue(ctx, w.Clock.Advance(customdomain.OutboxLease)); err != nil {
		t.Fatal(err)
	}
	if calls, took := ev.callsSince(), time.Since(began); calls != 1 || took >= 2*slow {
		t.Errorf("the round with %d events waiting called the slow Events %d times and took %v; want once, and less than %v",
			n-1, calls, took.Round(time.Millisecond), 2*slow)
	}

	// Events is quick again: the next round hands the rest over, and
	// requests hand theirs over themselves again.
	ev.setDelay(0)
	if _, err := w.Engine.RunDue(ctx, w.Clock.Advance(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "quick.example.com"); err != nil {
		t.Fatal(err)
	}
	en, err := w.Store.DomainByName(ctx, "quick.example.com")
	if err != nil || len(en.Outbox) != 0 {
		t.Fatalf("an add once Events is quick again left %d events waiting (%v); want it handed over at once", len(en.Outbox), err)
	}
	for i := range n {
		name := fmt.Sprintf("s%d.example.com", i)
		if en, err := w.Store.DomainByName(ctx, name); err != nil || len(en.Outbox) != 0 {
			t.Fatalf("%s still has %d events waiting (%v)", name, len(en.Outbox), err)
		}
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.taken) != n+1 {
		t.Fatalf("Events took %d events, want %d", len(ev.taken), n+1)
	}
	for id, times := range ev.taken {
		if times != 1 {
			t.Errorf("event %s taken %d times, want once", id, times)
		}
	}
}
