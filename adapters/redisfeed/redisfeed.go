// Package redisfeed carries changefeed changes between processes over
// Redis pub/sub, on the channel PREFIX+"changes".
//
// Redis delivers a published message to the subscribers connected at that
// moment, and to no one else. The subscription therefore watches its own
// connection: it pings Redis every HealthInterval, whether or not messages
// arrive, and reports KindLost when a ping goes unanswered for an interval
// or the connection fails, then reconnects with backoff and reports
// KindLive once subscribed again.
package redisfeed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/changefeed"
)

// DefaultHealthInterval is how often a subscription pings Redis, and how
// long it waits for the answer. Redis answers after every message it sent
// before, so a message published at any moment has arrived within twice
// that, 800 ms, or the subscription reports KindLost, whether the
// connection is dead, paused or slow: a subscriber that forgets what it
// cached then still meets a 1 s staleness bound.
const DefaultHealthInterval = 400 * time.Millisecond

// Feed is a changefeed.Feed over Redis pub/sub.
type Feed struct {
	client  redis.UniversalClient
	channel string
	// HealthInterval overrides DefaultHealthInterval when positive. Set it
	// before Subscribe.
	HealthInterval time.Duration
	// OnError, when set, is told why a subscription broke or could not
	// be made, for logging. Set it before Subscribe.
	OnError func(error)
}

var _ changefeed.Feed = (*Feed)(nil)

// New returns a feed on the channel prefix+"changes" of client. Processes
// that must hear each other use the same prefix. The caller closes client.
// Build client with redislimit.ParseOptions' settings, or at least
// ContextTimeoutEnabled: without it go-redis ignores a context's deadline,
// and a Publish over a link that stopped answering waits out the client's
// own timeouts instead.
func New(client redis.UniversalClient, prefix string) *Feed {
	return &Feed{client: client, channel: prefix + "changes"}
}

// Channel returns the Redis channel the feed uses.
func (f *Feed) Channel() string { return f.channel }

// Publish implements changefeed.Feed. Its first attempt gets half of the
// time ctx leaves (without a deadline, the client's read timeout): a
// pooled connection that a NAT or firewall dropped while idle, without a
// word, is then given up, and one more attempt, on another connection,
// gets the rest.
func (f *Feed) Publish(ctx context.Context, c changefeed.Change) error {
	msg, err := changefeed.Encode(c)
	if err != nil {
		return err
	}
	// TCP keepalives (go-redis's: 30 s idle, then 3 probes 5 s apart)
	// reveal a dropped connection only after 45 s. A live one, even over
	// a slow link, answers within half the time; go-redis closes one
	// whose answer timed out. A change delivered twice does no harm.
	actx, cancel := ctx, context.CancelFunc(func() {})
	if deadline, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
	}
	err = f.client.Publish(actx, f.channel, msg).Err()
	cancel()
	if timedOut(err) && ctx.Err() == nil {
		err = f.client.Publish(ctx, f.channel, msg).Err()
	}
	if err != nil {
		return fmt.Errorf("redisfeed: publish: %w", err)
	}
	return nil
}

// timedOut reports whether err is a wait for an answer that ran out.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Subscribe implements changefeed.Feed: it subscribes again, with
// backoff, whenever the connection fails (changefeed.Resubscribe). It
// returns as soon as ctx ends, also while a connection is still being
// made; that connection is closed once the client gives up on it (its
// ReadTimeout, on a link that does not answer).
func (f *Feed) Subscribe(ctx context.Context, fn func(changefeed.Change)) error {
	return changefeed.Resubscribe(ctx, fn, f.subscribeOnce, f.OnError)
}

// subscribeOnce subscribes on a new connection and delivers changes until
// the connection fails or ctx is done. live reports whether it got as far
// as delivering KindLive.
func (f *Feed) subscribeOnce(ctx context.Context, fn func(changefeed.Change)) (live bool, err error) {
	interval := f.HealthInterval
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	ps := f.client.Subscribe(ctx)
	// go-redis reads a new connection's handshake without watching ctx,
	// and holds ps meanwhile, so that even Close waits: on a paused link,
	// until the client's read timeout. So the subscription is made apart,
	// and one whose ctx ends first is left to close ps when it is done.
	subscribed := make(chan error, 1)
	go func() { subscribed <- ps.Subscribe(ctx, f.channel) }()
	select {
	case err := <-subscribed:
		if err != nil {
			ps.Close()
			return false, fmt.Errorf("redisfeed: subscribe: %w", err)
		}
	case <-ctx.Done():
		go func() { <-subscribed; ps.Close() }()
		return false, nil
	}
	// go-redis reconnects a subscription whose connection broke by itself,
	// holding ps until the new connection's handshake is answered or times
	// out, and Close and Ping wait for ps meanwhile. So ps is closed apart,
	// and pinged apart (below): a broken connection on a link that has
	// stopped answering is reported lost within two health intervals, not
	// after the client's read timeout.
	defer func() { go ps.Close() }()
	// A receive does not notice ctx ending until its timeout; closing the
	// connection ends it at once.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	// Only once Redis confirms the subscription is every later message
	// sure to arrive.
	for {
		msg, err := ps.ReceiveTimeout(ctx, 2*interval)
		if err != nil {
			return false, fmt.Errorf("redisfeed: subscribe: %w", err)
		}
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == f.channel {
			break
		}
	}
	fn(changefeed.Change{Kind: changefeed.KindLive})

	// Messages are read apart, without a deadline: a read that ends at
	// its deadline inside a message leaves the rest of it to be parsed as
	// the next reply, which breaks the subscription or passes a payload
	// off as a pong. Closing ps (deferred, or as ctx ends) ends the read.
	received := make(chan any)
	failed := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			msg, err := ps.Receive(ctx)
			if err != nil {
				failed <- err
				return
			}
			select {
			case received <- msg:
			case <-done:
				return
			}
		}
	}()

	// Every interval, whether or not messages arrive, the last ping must
	// have been answered, and another is sent. Redis answers a ping after
	// every message it sent before, so a message published at any moment
	// has arrived within two intervals, or KindLost is reported: a link
	// that slows down while messages keep coming is noticed too.
	check := time.NewTimer(interval)
	defer check.Stop()
	answered := true
	pinged := make(chan error, 1) // at most one ping is under way
	for {
		var msg any
		select {
		case <-ctx.Done():
			return true, nil
		case err := <-failed:
			if ctx.Err() != nil {
				return true, nil
			}
			return true, fmt.Errorf("redisfeed: receive: %w", err)
		case <-check.C:
			if !answered {
				return true, errors.New("redisfeed: Redis did not answer a ping")
			}
			go func() { pinged <- ps.Ping(ctx) }()
			answered = false
			check.Reset(interval)
			continue
		case err := <-pinged:
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return true, nil
			}
			return true, fmt.Errorf("redisfeed: ping: %w", err)
		case msg = <-received:
		}
		if _, ok := msg.(*redis.Pong); ok {
			answered = true
			continue
		}
		m, ok := msg.(*redis.Message)
		if !ok || m.Channel != f.channel {
			continue // a subscription notice
		}
		c, err := changefeed.Decode(m.Payload)
		if err != nil {
			if f.OnError != nil {
				f.OnError(fmt.Errorf("redisfeed: dropped a message: %w", err))
			}
			continue
		}
		fn(c)
	}
}
