// Package feedtest is the conformance suite every changefeed.Feed passes:
// changefeed.Local, adapters/redisfeed and adapters/pgfeed run it against
// their real backends.
package feedtest

import (
	"context"
	"fmt"
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
// they need closing is closed through t.Cleanup.
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
