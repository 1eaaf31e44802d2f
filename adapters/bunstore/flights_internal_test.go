package bunstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// gatedReads is a read whose runs each wait for a release, and return
// their run's number.
type gatedReads struct {
	gates chan chan struct{} // each run takes one gate and waits for it to close
	runs  atomic.Int32
}

func (g *gatedReads) read(ctx context.Context) (int, error) {
	gate := <-g.gates
	n := int(g.runs.Add(1))
	select {
	case <-gate:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// waitSlot waits until cond holds of k's slot.
func waitSlot(t *testing.T, f *flights[string, int], what string, cond func(s *flightSlot[int]) bool) {
	t.Helper()
	waitUntil(t, &f.mu, what, func() bool { s := f.slots["k"]; return s != nil && cond(s) })
}

type result struct {
	n      int
	shared bool
	err    error
}

func call(f *flights[string, int], ctx context.Context, g *gatedReads) chan result {
	c := make(chan result, 1)
	go func() {
		n, shared, err := f.do(ctx, "k", g.read)
		c <- result{n, shared, err}
	}()
	return c
}

// TestFlightsShareOnlyRunsThatStartLater: reads arriving while a run is
// under way get the next run's result, all of them from one run; the
// first read gets its own.
func TestFlightsShareOnlyRunsThatStartLater(t *testing.T) {
	var f flights[string, int]
	g := &gatedReads{gates: make(chan chan struct{}, 2)}
	first, second := make(chan struct{}), make(chan struct{})
	g.gates <- first
	g.gates <- second
	ctx := context.Background()

	a := call(&f, ctx, g)
	waitSlot(t, &f, "the first run under way", func(s *flightSlot[int]) bool { return s.running != nil })
	b := call(&f, ctx, g)
	c := call(&f, ctx, g)
	waitSlot(t, &f, "two reads on the next run", func(s *flightSlot[int]) bool { return s.next != nil && s.next.joined == 1 })
	close(first)
	if r := <-a; r.n != 1 || r.shared || r.err != nil {
		t.Fatalf("the first read: %+v, want its own run 1", r)
	}
	close(second)
	rb, rc := <-b, <-c
	if rb.n != 2 || rc.n != 2 || rb.err != nil || rc.err != nil || rb.shared == rc.shared {
		t.Fatalf("the reads that arrived during run 1: %+v and %+v, want run 2, run by one and shared with the other", rb, rc)
	}
	if n := g.runs.Load(); n != 2 {
		t.Fatalf("%d runs for three reads, want 2", n)
	}
	f.mu.Lock()
	left := len(f.slots)
	f.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d slots left after every read returned", left)
	}
}

// TestFlightsRunnersContextIsNotShared: when the read running a shared run
// is canceled, the reads waiting on it run their own rather than report
// its cancellation.
func TestFlightsRunnersContextIsNotShared(t *testing.T) {
	var f flights[string, int]
	g := &gatedReads{gates: make(chan chan struct{}, 3)}
	first, third := make(chan struct{}), make(chan struct{})
	g.gates <- first
	g.gates <- make(chan struct{}) // run 2 never ends on its own
	g.gates <- third
	ctx := context.Background()

	a := call(&f, ctx, g)
	waitSlot(t, &f, "the first run under way", func(s *flightSlot[int]) bool { return s.running != nil })
	runnerCtx, cancel := context.WithCancel(ctx)
	b := call(&f, runnerCtx, g) // will run run 2
	waitSlot(t, &f, "a read leading the next run", func(s *flightSlot[int]) bool { return s.next != nil })
	c := call(&f, ctx, g)
	waitSlot(t, &f, "a second read on the next run", func(s *flightSlot[int]) bool { return s.next != nil && s.next.joined == 1 })
	close(first)
	<-a
	waitSlot(t, &f, "run 2 under way", func(s *flightSlot[int]) bool { return s.next == nil && g.runs.Load() == 2 })
	cancel()
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the canceled runner: %+v, want context.Canceled", r)
	}
	close(third)
	if r := <-c; r.err != nil || r.n != 3 || r.shared {
		t.Fatalf("the read that waited on the canceled run: %+v, want its own run 3", r)
	}
}
