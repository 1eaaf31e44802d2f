// Package pgfeed carries changefeed changes between processes over
// PostgreSQL's LISTEN/NOTIFY, so that servers sharing a PostgreSQL
// database hear each other without any other service.
//
// A subscription holds one dedicated connection (pgx, outside any pool)
// that LISTENs on the channel. PostgreSQL queues notifications for a
// listening session only: a subscriber whose connection drops misses what
// is published meanwhile. The subscription therefore pings the server
// every HealthInterval, whether or not notifications arrive, reports
// KindLost when a ping goes unanswered for an interval or the connection
// fails, reconnects with backoff and reports KindLive once it listens
// again. Publish uses a second connection, opened on first use and kept,
// reopened when it has failed or has stopped answering (see Publish).
//
// Notifications go to every session listening on the channel in the same
// database, whatever its search_path. So the default channel is one per
// schema: DefaultChannel for the public one, and DefaultChannel, ":" and
// the search path for a connection that chooses another (see New).
// Deployments sharing a schema and not to hear each other name channels
// of their own.
package pgfeed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/petstorekit/petstore/changefeed"
)

// DefaultChannel is the channel servers use unless told otherwise.
const DefaultChannel = "petstore_changes"

// DefaultHealthInterval is how often a subscription pings the server, and
// how long it waits for the answer. The server sends the notifications it
// queued for the session before the answer, so one sent at any moment
// has arrived within twice that, 800 ms, or the subscription reports
// KindLost, whether the connection is dead, paused or slow: a subscriber
// that forgets what it cached then still meets a 1 s staleness bound.
const DefaultHealthInterval = 400 * time.Millisecond

// Feed is a changefeed.Feed over PostgreSQL LISTEN/NOTIFY.
type Feed struct {
	config  *pgx.ConnConfig
	channel string
	// HealthInterval overrides DefaultHealthInterval when positive. Set it
	// before Subscribe.
	HealthInterval time.Duration
	// OnError, when set, is told why a subscription broke or could not
	// be made, for logging. Set it before Subscribe.
	OnError func(error)

	pub  *pgx.Conn     // Publish's connection, nil until used or after a failure
	turn chan struct{} // holds one token for whoever uses pub

	// closing is done once Close is called: a publish under way ends, and
	// later ones connect to nothing.
	closing      context.Context
	endPublishes context.CancelFunc
}

// ErrClosed is the error of a Publish after Close.
var ErrClosed = errors.New("pgfeed: feed is closed")

// DefaultPublishTimeout bounds a Publish whose context has no deadline,
// so a paused link holds up the publishes queued behind it that long at
// most.
const DefaultPublishTimeout = 5 * time.Second

var _ changefeed.Feed = (*Feed)(nil)

// New returns a feed on channel of the database at connString, a
// postgres:// URL or key=value string as pgx takes it. An empty channel
// is the schema's: DefaultChannel, or, when connString sets a search_path
// other than public, "petstore_changes:" and that path (its SHA-256, in
// hex, past 63 bytes). It does not connect; Close closes what Publish
// opened.
func New(connString, channel string) (*Feed, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgfeed: %w", err)
	}
	if channel == "" {
		channel = schemaChannel(cfg.RuntimeParams["search_path"])
	}
	if len(channel) > 63 { // NAMEDATALEN-1: PostgreSQL would truncate it
		return nil, fmt.Errorf("pgfeed: channel name longer than 63 bytes")
	}
	f := &Feed{config: cfg, channel: channel, turn: make(chan struct{}, 1)}
	f.closing, f.endPublishes = context.WithCancel(context.Background())
	return f, nil
}

// schemaChannel is the default channel of a connection whose search_path
// is path: deployments in two schemas of one database hold different
// data, so each hears only its own changes.
func schemaChannel(path string) string {
	if path = strings.TrimSpace(path); path == "" || path == "public" {
		return DefaultChannel
	}
	if ch := DefaultChannel + ":" + path; len(ch) <= 63 {
		return ch
	}
	sum := sha256.Sum256([]byte(path))
	return DefaultChannel + ":" + hex.EncodeToString(sum[:16])
}

// Channel returns the channel the feed uses.
func (f *Feed) Channel() string { return f.channel }

// Publish implements changefeed.Feed. The notification is sent outside
// any transaction, so subscribers hear of it at once. Publishes take
// turns on one connection; waiting for a turn ends with ctx, and a ctx
// with no deadline gets DefaultPublishTimeout. A publish under way when
// Close is called, and any after, returns ErrClosed; none connects after
// Close. The connection kept from an earlier publish gets half of the
// time left to answer: one that a NAT or firewall dropped while idle,
// without a word, is then closed, and the change is published on a new
// connection with the other half. A Publish that returns an error may
// have sent its notification all the same, and subscribers may hear it
// later (see changefeed.Feed).
func (f *Feed) Publish(ctx context.Context, c changefeed.Change) error {
	payload, err := changefeed.Encode(c)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultPublishTimeout)
		defer cancel()
	}
	// Close ends a publish stuck on a dead link at once, rather than keep
	// a shutting-down process waiting for the publish's deadline.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(f.closing, cancel)()
	err = f.notify(ctx, payload)
	if err != nil && f.closing.Err() != nil {
		return ErrClosed
	}
	return err
}

// notify sends payload on Publish's connection, taking its turn.
func (f *Feed) notify(ctx context.Context, payload string) (err error) {
	select {
	case f.turn <- struct{}{}:
		defer func() { <-f.turn }()
	case <-ctx.Done():
		return fmt.Errorf("pgfeed: notify: waiting for the connection: %w", ctx.Err())
	}
	if f.closing.Err() != nil {
		return ErrClosed
	}
	// A kept connection may have died while idle: closed by the server,
	// or dropped without a word by a NAT or firewall, which TCP keepalives
	// (Go's defaults: pgx sets none) reveal only after minutes. So it gets
	// half of the time left, which a live one, even over a slow link,
	// answers within, and then one new connection is tried with the rest.
	// A change delivered twice does no harm.
	for reused := f.pub != nil; ; reused = false {
		if f.pub == nil {
			if f.pub, err = pgx.ConnectConfig(ctx, f.config.Copy()); err != nil {
				f.pub = nil
				return fmt.Errorf("pgfeed: connect: %w", err)
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); reused && ok {
			actx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		}
		_, err = f.pub.Exec(actx, "SELECT pg_notify($1, $2)", f.channel, payload)
		cancel()
		if err == nil {
			return nil
		}
		_ = f.pub.Close(context.Background())
		f.pub = nil
		if !reused || ctx.Err() != nil {
			return fmt.Errorf("pgfeed: notify: %w", err)
		}
	}
}

// Close ends the publish under way, if any, and closes Publish's
// connection; publishes fail with ErrClosed from then on. Subscriptions
// end with their context.
func (f *Feed) Close() error {
	f.endPublishes()
	f.turn <- struct{}{}
	defer func() { <-f.turn }()
	if f.pub == nil {
		return nil
	}
	err := f.pub.Close(context.Background())
	f.pub = nil
	return err
}

// Subscribe implements changefeed.Feed: it subscribes again, with
// backoff, whenever the connection fails (changefeed.Resubscribe).
func (f *Feed) Subscribe(ctx context.Context, fn func(changefeed.Change)) error {
	return changefeed.Resubscribe(ctx, fn, f.listenOnce, f.OnError)
}

// listenOnce listens on a new connection and delivers changes until the
// connection fails or ctx is done. live reports whether it got as far as
// delivering KindLive.
func (f *Feed) listenOnce(ctx context.Context, fn func(changefeed.Change)) (live bool, err error) {
	interval := f.HealthInterval
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := pgx.ConnectConfig(cctx, f.config.Copy())
	cancel()
	if err != nil {
		return false, fmt.Errorf("pgfeed: connect: %w", err)
	}
	defer conn.Close(context.Background())
	cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	_, err = conn.Exec(cctx, "LISTEN "+pgx.Identifier{f.channel}.Sanitize())
	cancel()
	if err != nil {
		return false, fmt.Errorf("pgfeed: listen: %w", err)
	}
	fn(changefeed.Change{Kind: changefeed.KindLive})

	// Every interval, whether or not notifications arrive, the session
	// must answer a ping within an interval. PostgreSQL sends what it
	// queued for the session before the answer, so a notification sent at
	// any moment has arrived within two intervals, or the subscription
	// ends: a link that slows down while notifications keep coming is
	// noticed too.
	check := time.Now().Add(interval)
	for {
		if !time.Now().Before(check) {
			// Notifications arriving meanwhile are kept by pgx for the
			// next wait.
			check = time.Now().Add(interval)
			pctx, cancel := context.WithDeadline(ctx, check)
			err := conn.Ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return true, nil
			}
			if err != nil {
				return true, fmt.Errorf("pgfeed: ping: %w", err)
			}
			continue
		}
		wctx, cancel := context.WithDeadline(ctx, check)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return true, nil
		}
		if err != nil {
			if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
				return true, fmt.Errorf("pgfeed: wait: %w", err)
			}
			continue // the ping is due
		}
		if n.Channel != f.channel {
			continue
		}
		c, err := changefeed.Decode(n.Payload)
		if err != nil {
			if f.OnError != nil {
				f.OnError(fmt.Errorf("pgfeed: dropped a notification: %w", err))
			}
			continue
		}
		fn(c)
	}
}
