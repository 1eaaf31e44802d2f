// Package changefeed tells every process of a deployment that something it
// may hold in memory has changed: an API key was revoked or re-planned, a
// custom domain was removed, pets were created. Processes keep copies
// (keycache keeps authenticated keys) and drop them when a Change names
// them.
//
// A Feed is the port; Local is the implementation for a single process,
// and adapters/redisfeed (Redis pub/sub) and adapters/pgfeed (PostgreSQL
// LISTEN/NOTIFY) carry changes between processes. Delivery between
// processes is at most once: a subscriber whose connection drops misses
// what is published meanwhile. Subscribe therefore reports the state of
// the subscription itself, as the reserved kinds KindLost and KindLive, so
// that a cache can forget everything it holds whenever it may have missed
// a change.
package changefeed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Kinds of change. A kind is a short word without ':'; the ID that goes
// with it is whatever identifies the changed thing.
const (
	// KindKey: the API key with this ID was revoked or changed plan.
	KindKey = "key"
	// KindDomain: the custom domain with this name changed or was removed.
	KindDomain = "domain"
	// KindPets: pets were created, so pages encoded before it may be out
	// of date. ID is the lowest id among them, followed, when every one
	// had a status, by ':' and their statuses, comma-separated
	// ("31:available,pending"); without them, any status may have changed.
	// PetsID writes it and ParsePetsID reads it.
	KindPets = "pets"

	// KindLive is never published: Subscribe delivers it when the
	// subscription starts receiving, first and after every reconnection.
	// Changes published before it may have been missed.
	KindLive = "live"
	// KindLost is never published: Subscribe delivers it when the
	// subscription stopped receiving. Changes published from now until the
	// next KindLive are missed.
	KindLost = "lost"
)

// MaxPayload bounds an encoded change. PostgreSQL refuses NOTIFY payloads
// of 8000 bytes or more; a key id or a domain name is far shorter.
const MaxPayload = 1024

// Change names one changed thing.
type Change struct {
	Kind string
	ID   string
}

// Feed publishes changes to, and receives them from, every process that
// shares it. Implementations must be safe for concurrent use.
type Feed interface {
	// Publish announces c to every subscriber, this process's included.
	// It returns an error when c is malformed (see Encode) or the feed
	// did not confirm that it took c. Such an error does not mean that no
	// subscriber saw c: a change sent on a link whose answer was lost
	// (the deadline passed, the link broke) may still reach subscribers,
	// even after Publish has returned. Publishing c again is safe, since
	// a change heard twice does no harm.
	Publish(ctx context.Context, c Change) error

	// Subscribe calls fn with every change published while the
	// subscription is live, and with KindLive and KindLost as the
	// subscription starts, breaks and resumes. It reconnects by itself,
	// with backoff, and returns only when ctx is done, with ctx.Err(). fn
	// is called from one goroutine at a time and should return quickly.
	Subscribe(ctx context.Context, fn func(Change)) error
}

// Encode returns the wire form of c, "kind:id", which Decode reverses.
// It returns an error for an empty, reserved or ':'-bearing kind and for a
// change longer than MaxPayload.
func Encode(c Change) (string, error) {
	switch {
	case c.Kind == "" || strings.ContainsAny(c.Kind, ":\x00"):
		return "", fmt.Errorf("changefeed: bad kind %q", c.Kind)
	case c.Kind == KindLive || c.Kind == KindLost:
		return "", fmt.Errorf("changefeed: kind %q is reserved for Subscribe", c.Kind)
	case strings.ContainsRune(c.ID, 0):
		return "", errors.New("changefeed: id contains NUL")
	case len(c.Kind)+1+len(c.ID) > MaxPayload:
		return "", fmt.Errorf("changefeed: change longer than %d bytes", MaxPayload)
	}
	return c.Kind + ":" + c.ID, nil
}

// Decode parses the wire form Encode writes. A payload that Encode could
// not have written is an error, so a stray message on a shared channel is
// dropped rather than taken for a change.
func Decode(payload string) (Change, error) {
	kind, id, ok := strings.Cut(payload, ":")
	c := Change{Kind: kind, ID: id}
	if !ok {
		return Change{}, fmt.Errorf("changefeed: malformed change %q", truncate(payload))
	}
	if _, err := Encode(c); err != nil {
		return Change{}, err
	}
	return c, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Local is a Feed within one process: Publish hands the change to every
// subscriber before it returns, so a change published in a process has
// taken effect there when Publish returns. A subscriber's fn must not
// publish to the same Local. The zero value is ready to use.
type Local struct {
	mu   sync.Mutex // serialises deliveries, so fn never runs concurrently
	subs map[*func(Change)]struct{}
}

var _ Feed = (*Local)(nil)

// Publish implements Feed.
func (l *Local) Publish(_ context.Context, c Change) error {
	if _, err := Encode(c); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for fn := range l.subs {
		(*fn)(c)
	}
	return nil
}

// Subscribe implements Feed. A local subscription never breaks: fn gets
// KindLive once, then every change.
func (l *Local) Subscribe(ctx context.Context, fn func(Change)) error {
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[*func(Change)]struct{}{}
	}
	l.subs[&fn] = struct{}{}
	fn(Change{Kind: KindLive})
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	delete(l.subs, &fn)
	l.mu.Unlock()
	return ctx.Err()
}

// Resubscribe is the Subscribe of a feed over a connection that can fail
// (Redis, PostgreSQL): it runs once, which subscribes on a new connection
// and delivers changes (KindLive first) until the connection fails,
// reporting whether it got as far as KindLive. After a live subscription
// ends it delivers KindLost, so caches distrust what they hold; then it
// waits Backoff and subscribes again, until ctx is done. onError (may be
// nil) hears each failure.
func Resubscribe(ctx context.Context, fn func(Change), once func(context.Context, func(Change)) (live bool, err error), onError func(error)) error {
	failures := 0
	for {
		live, err := once(ctx, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if live {
			fn(Change{Kind: KindLost})
			failures = 0
		}
		failures++
		if onError != nil && err != nil {
			onError(err)
		}
		if err := Sleep(ctx, Backoff(failures)); err != nil {
			return err
		}
	}
}

// Backoff returns how long a subscription waits before its next attempt
// to reconnect after failures consecutive failures: 100 ms, doubling, at
// most 5 s. The adapters share it so that a restarted Redis or PostgreSQL
// is not met by every process at the same instant, nor left unwatched for
// long.
func Backoff(failures int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < failures && d < 5*time.Second; i++ {
		d *= 2
	}
	d = min(d, 5*time.Second)
	// Up to a quarter of jitter spreads the processes' attempts.
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

// Sleep waits for d or until ctx is done, and returns ctx.Err() then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AllLive hands apply the changes of n feeds that tell it the same kind of
// thing (a key cache that hears key changes on Redis and on PostgreSQL),
// as if they were one feed that is live only while every one of them is:
// a change missed on any is as bad. It returns one function per feed, to
// subscribe with. Changes other than KindLive and KindLost pass through;
// those two pass on as KindLost while any feed is lost or has not been
// live yet, and as KindLive once all are. A feed whose Subscribe returns
// no longer tells anything: call its function with KindLost then, as
// keycache.Cache.Follow does. The functions may be called concurrently;
// apply is called from one at a time.
func AllLive(n int, apply func(Change)) []func(Change) {
	var mu sync.Mutex
	live := make([]bool, n)
	fns := make([]func(Change), n)
	for i := range fns {
		fns[i] = func(c Change) {
			mu.Lock()
			defer mu.Unlock()
			if c.Kind == KindLive || c.Kind == KindLost {
				live[i] = c.Kind == KindLive
				c = Change{Kind: KindLive}
				for _, l := range live {
					if !l {
						c = Change{Kind: KindLost}
					}
				}
			}
			apply(c)
		}
	}
	return fns
}
