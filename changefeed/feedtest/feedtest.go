// Package feedtest is the conformance suite every changefeed.Feed passes:
// changefeed.Local, adapters/redisfeed and adapters/pgfeed run it against
// their real backends.
package feedtest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/changefeed"
)

// patience bounds every wait for a change to arrive. Changes normally
// arrive within milliseconds; the bound only keeps a broken feed from
// hanging the test.
const patience = 10 * time.Second

// Open returns two feeds on one shared medium, as two processes of a
// deployment would hold them (for Local, the same feed twice). Whatever
// they need closing is closed through t.Cleanup, which must not mind a
// second Close: a feed with a Close method (io.Closer) is closed by the
// suite too.
type Open func(t *testing.T) (a, b changefeed.Feed)

// Run runs the suite; each subtest calls open once.
func Run(t *testing.T, open Open) {
	t.Run("subscription starts live", func(t *testing.T) {
		a, _ := open(t)
		r := Subscribe(t, a)
		r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	})

	t.Run("a change reaches every subscriber, the publisher's own included", func(t *testing.T) {
		a, b := open(t)
		ra, rb := Subscribe(t, a), Subscribe(t, b)
		ra.Want(t, changefeed.Change{Kind: changefeed.KindLive})
		rb.Want(t, changefeed.Change{Kind: changefeed.KindLive})
		for i, c := range []changefeed.Change{
			{Kind: changefeed.KindKey, ID: "key_1"},
			{Kind: changefeed.KindDomain, ID: "shop.example.com"},
			{Kind: changefeed.KindKey, ID: ""},
			{Kind: "other", ID: "with:colons and spaces"},
		} {
			if err := a.Publish(context.Background(), c); err != nil {
				t.Fatalf("Publish %d: %v", i, err)
			}
			ra.Want(t, c)
			rb.Want(t, c)
		}
	})

	t.Run("malformed changes are refused", func(t *testing.T) {
		a, _ := open(t)
		for _, c := range []changefeed.Change{
			{Kind: ""},
			{Kind: changefeed.KindLive},
			{Kind: changefeed.KindLost},
			{Kind: "a:b", ID: "x"},
			{Kind: changefeed.KindKey, ID: string(make([]byte, changefeed.MaxPayload))},
		} {
			if err := a.Publish(context.Background(), c); err == nil {
				t.Errorf("Publish(%.40q) succeeded, want an error", fmt.Sprint(c))
			}
		}
	})

	t.Run("a feed with a Close refuses to publish after it", func(t *testing.T) {
		a, _ := open(t)
		closer, ok := a.(io.Closer)
		if !ok {
			t.Skip("the feed has no Close")
		}
		if err := a.Publish(context.Background(), changefeed.Change{Kind: changefeed.KindKey, ID: "before"}); err != nil {
			t.Fatal(err)
		}
		if err := closer.Close(); err != nil {
			t.Fatal(err)
		}
		// A Publish that succeeds now has opened what nothing will close.
		if err := a.Publish(context.Background(), changefeed.Change{Kind: changefeed.KindKey, ID: "after"}); err == nil {
			t.Fatal("Publish after Close succeeded, want an error")
		}
	})

	t.Run("Subscribe returns when its context ends", func(t *testing.T) {
		a, _ := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		live := make(chan struct{}, 1)
		go func() {
			done <- a.Subscribe(ctx, func(c changefeed.Change) {
				if c.Kind == changefeed.KindLive {
					select {
					case live <- struct{}{}:
					default:
					}
				}
			})
		}()
		select {
		case <-live:
		case <-time.After(patience):
			t.Fatal("no KindLive")
		}
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Fatalf("Subscribe returned %v, want context.Canceled", err)
			}
		case <-time.After(patience):
			t.Fatal("Subscribe did not return after its context ended")
		}
	})
}

// Receiver collects what a subscription delivers.
type Receiver struct {
	c chan changefeed.Change
}

// Subscribe subscribes to f until the test ends and returns what it
// receives.
func Subscribe(t *testing.T, f changefeed.Feed) *Receiver {
	t.Helper()
	r := &Receiver{c: make(chan changefeed.Change, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Subscribe(ctx, func(c changefeed.Change) { r.c <- c })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// Want waits for the next change and fails t unless it is want.
func (r *Receiver) Want(t *testing.T, want changefeed.Change) {
	t.Helper()
	select {
	case got := <-r.c:
		if got != want {
			t.Fatalf("received %+v, want %+v", got, want)
		}
	case <-time.After(patience):
		t.Fatalf("nothing received within %v, want %+v", patience, want)
	}
}

// Faults is what RunFaults does to the link between one feed and its
// backend: internal/faultproxy's Proxy, in this repository.
type Faults interface {
	Cut()                     // closes every connection and refuses new ones
	Pause()                   // forwards nothing, as a black hole
	SetLatency(time.Duration) // delays everything by that much each way
	Restore()                 // ends every fault
}

// OpenFaulty returns two feeds on one shared medium, as two processes of
// a deployment would hold them: proxied reaches the backend through
// faults, direct does not.
type OpenFaulty func(t *testing.T) (proxied, direct changefeed.Feed, faults Faults)

// RunFaults checks the promise caches rely on, under every fault of the
// proxied feed's link: a change published at any moment reaches its
// subscription within bound, or the subscription reports KindLost or
// KindLive (it may have missed it) within bound, or had already reported
// KindLost. A cache that forgets what it holds on those then serves
// nothing older than bound.
func RunFaults(t *testing.T, bound time.Duration, open OpenFaulty) {
	t.Run("paused link", func(t *testing.T) {
		proxied, direct, faults := open(t)
		r := Follow(t, proxied)
		r.WaitLive(t)
		faults.Pause()
		defer faults.Restore()
		r.Reaches(t, direct, bound, changefeed.Change{Kind: changefeed.KindKey, ID: "key_paused"})
	})

	t.Run("a link slowing down while changes keep coming", func(t *testing.T) {
		proxied, direct, faults := open(t)
		r := Follow(t, proxied)
		r.WaitLive(t)
		defer faults.Restore()
		// Something is published every 50 ms, and the latency grows by
		// less than that each step, so the subscription is never quiet
		// for long: only checking the link as messages flow tells it is
		// falling behind.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_ = direct.Publish(ctx, changefeed.Change{Kind: "other", ID: "traffic"})
				_ = changefeed.Sleep(ctx, 50*time.Millisecond)
			}
		}()
		defer func() { cancel(); <-done }()
		for d := bound / 4; d <= bound*3/2; d += bound / 4 {
			faults.SetLatency(d)
			time.Sleep(bound / 4)
		}
		r.Reaches(t, direct, bound, changefeed.Change{Kind: changefeed.KindKey, ID: "key_slow"})
	})

	t.Run("a cut link is lost at once and live again once back", func(t *testing.T) {
		proxied, direct, faults := open(t)
		r := Follow(t, proxied)
		r.WaitLive(t)
		faults.Cut()
		r.Reaches(t, direct, bound, changefeed.Change{Kind: changefeed.KindKey, ID: "key_cut"})
		faults.Restore()
		r.WaitLive(t)
		after := changefeed.Change{Kind: changefeed.KindKey, ID: "key_after"}
		r.Reaches(t, direct, bound, after)
		r.WaitFor(t, after) // delivered itself, not only reported lost
	})

	t.Run("Subscribe returns at once when cancelled while connecting through a paused link", func(t *testing.T) {
		proxied, _, faults := open(t)
		faults.Pause()
		defer faults.Restore()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- proxied.Subscribe(ctx, func(changefeed.Change) {}) }()
		time.Sleep(100 * time.Millisecond) // connected, waiting for the first answer
		cancel()
		cancelled := time.Now()
		// A subscription that waits for the connection's own timeout
		// before it notices holds up a shutdown that long.
		const prompt = 250 * time.Millisecond
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Fatalf("Subscribe returned %v, want context.Canceled", err)
			}
			if d := time.Since(cancelled); d > prompt {
				t.Fatalf("Subscribe returned %v after its context ended, want within %v", d.Round(time.Millisecond), prompt)
			}
		case <-time.After(patience):
			t.Fatal("Subscribe did not return after its context ended")
		}
	})

	t.Run("a burst arrives whole and in order", func(t *testing.T) {
		proxied, direct, _ := open(t)
		r := Follow(t, proxied)
		r.WaitLive(t)
		const n = 500
		for i := range n {
			if err := direct.Publish(context.Background(), changefeed.Change{Kind: "burst", ID: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			r.WaitFor(t, changefeed.Change{Kind: "burst", ID: fmt.Sprint(i)})
		}
	})
}

// Follower records what a subscription delivers, and when.
type Follower struct {
	mu     sync.Mutex
	events []event
	wake   chan struct{}
	next   int // the first event WaitFor has not consumed
}

type event struct {
	at time.Time
	c  changefeed.Change
}

// Follow subscribes to f until the test ends and records what it
// delivers.
func Follow(t *testing.T, f changefeed.Feed) *Follower {
	t.Helper()
	r := &Follower{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Subscribe(ctx, func(c changefeed.Change) {
			r.mu.Lock()
			r.events = append(r.events, event{time.Now(), c})
			r.mu.Unlock()
			select {
			case r.wake <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// WaitFor waits until the subscription delivers want, skipping anything
// else, and fails t after patience.
func (r *Follower) WaitFor(t *testing.T, want changefeed.Change) {
	t.Helper()
	deadline := time.After(patience)
	for {
		r.mu.Lock()
		for ; r.next < len(r.events); r.next++ {
			if r.events[r.next].c == want {
				r.next++
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("%+v not delivered within %v", want, patience)
		}
	}
}

// WaitLive waits for the next KindLive.
func (r *Follower) WaitLive(t *testing.T) {
	t.Helper()
	r.WaitFor(t, changefeed.Change{Kind: changefeed.KindLive})
}

// Reaches publishes c on pub and fails t unless, within bound of Publish
// returning, the subscription delivered c or reported KindLost or
// KindLive, or had reported KindLost (and not KindLive since) when
// Publish was called.
func (r *Follower) Reaches(t *testing.T, pub changefeed.Feed, bound time.Duration, c changefeed.Change) {
	t.Helper()
	r.mu.Lock()
	sent, seen, lost := time.Now(), len(r.events), false
	for _, e := range r.events {
		switch e.c.Kind {
		case changefeed.KindLost:
			lost = true
		case changefeed.KindLive:
			lost = false
		}
	}
	r.mu.Unlock()
	if err := pub.Publish(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if lost {
		return
	}
	deadline := time.After(bound)
	for {
		r.mu.Lock()
		for _, e := range r.events[seen:] {
			if e.c == c || e.c.Kind == changefeed.KindLost || e.c.Kind == changefeed.KindLive {
				r.mu.Unlock()
				t.Logf("%+v after %v", e.c, e.at.Sub(sent).Round(time.Millisecond))
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("%+v published, and within %v neither delivered nor a KindLost or KindLive", c, bound)
		}
	}
}
