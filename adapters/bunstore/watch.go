package bunstore

import (
	"context"
	"errors"
	"time"

	"github.com/petstorekit/petstore/changefeed"
)

// DefaultWatchEvery is how often WatchChanges looks at SQLite's counters
// when given no interval: a commit by another process is seen within it
// plus one look (well under 100 ms).
const DefaultWatchEvery = 25 * time.Millisecond

// WatchChanges is, on SQLite, the change feed that processes sharing the
// database file have without any other service: every interval it looks
// at SQLite's PRAGMA data_version and calls fn with a changefeed.KindPets
// change (ID "": anything may have changed) when another process, or a
// row changed by hand, committed since the last look. It calls fn with
// KindLive after its first good look and after a failed one, and with
// KindLost when a look fails, so a cache that follows it
// (httpx.Cache.Apply) keeps nothing while it cannot tell. A look waits
// for the store's own creates, and fails once one of them has waited an
// interval to begin, for another connection's write lock (which it may
// do for up to SQLite's busy_timeout) or for a slow disk: someone else is
// writing then, or the look could not be made in time. An interval of a
// few milliseconds thus reads a busy disk as lost; the default does not.
//
// The store's own pet creates and Idempotency-Key records are not
// reported: while WatchChanges runs, the store commits them on one
// pooled connection it holds, and data_version on that connection moves
// only for the commits of other connections. Its other writes (keys,
// domains, ...) are reported, as they commit on other connections. A
// reader of the database that keeps answers until fn says otherwise thus
// serves another process's commit within interval plus one look, and
// must drop what its own process's creates change itself, as
// httpx.Cache does. On an in-memory database, whose one connection no
// other process shares, the look is the read cache's, and every commit is
// reported.
//
// An interval of 0 means DefaultWatchEvery. On PostgreSQL and MySQL,
// which have no such counter, it returns errors.ErrUnsupported at once;
// otherwise it returns ctx.Err() when ctx is done. fn is called from one
// goroutine and should return quickly.
func (s *Store) WatchChanges(ctx context.Context, interval time.Duration, fn func(changefeed.Change)) error {
	if s.reads == nil {
		return errors.ErrUnsupported
	}
	if interval <= 0 {
		interval = DefaultWatchEvery
	}
	look := s.reads.check
	if s.db.DB.Stats().MaxOpenConnections != 1 {
		look = func(ctx context.Context) (uint64, bool) { return s.othersCommits(ctx, interval) }
		defer func() { // the held connection goes back to the pool
			_ = s.group.between(context.WithoutCancel(ctx), func() error { s.group.dropConn(); return nil })
		}()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	live, last := false, uint64(0)
	for {
		epoch, ok := look(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case !ok && live:
			live = false
			fn(changefeed.Change{Kind: changefeed.KindLost})
		case ok && !live:
			live, last = true, epoch
			fn(changefeed.Change{Kind: changefeed.KindLive})
		case ok && epoch != last:
			last = epoch
			fn(changefeed.Change{Kind: changefeed.KindPets})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// othersCommits returns a value that changes whenever a connection other
// than the one the store's groups write on has committed, holding that
// connection for the groups first if none is. A connection held anew
// changes the value too (its data_version starts afresh). It fails once
// a group it waits for has waited patience for the write lock.
func (s *Store) othersCommits(ctx context.Context, patience time.Duration) (epoch uint64, ok bool) {
	g := s.group
	err := g.betweenUnlessLocked(ctx, patience, func() error {
		// A held connection answers even after the database is closed;
		// the pool says whether it is.
		if err := s.db.DB.PingContext(ctx); err != nil {
			g.dropConn()
			return err
		}
		if g.conn == nil {
			c, err := s.db.DB.Conn(ctx)
			if err != nil {
				return err
			}
			g.conn, g.connGen = c, g.connGen+1
		}
		var version uint64
		if err := g.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
			g.dropConn()
			return err
		}
		epoch = g.connGen<<32 | version
		return nil
	})
	return epoch, err == nil
}
