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
// at the counters the read cache looks at (see readcache.go) and calls fn
// with a changefeed.KindPets change (ID "": anything may have changed)
// when any connection, of this process or another, committed since the
// last look. It calls fn with KindLive after its first good look and
// after a failed one, and with KindLost when a look fails, so a cache
// that follows it (httpx.Cache.Apply) keeps nothing while it cannot tell.
//
// A reader of the database that keeps answers until fn says otherwise
// thus serves another process's commit, or a row changed by hand, within
// interval plus one look; its own process's writes it must drop itself.
// An interval of 0 means DefaultWatchEvery. On PostgreSQL and MySQL, which
// have no such counter, it returns errors.ErrUnsupported at once;
// otherwise it returns ctx.Err() when ctx is done. fn is called from one
// goroutine and should return quickly.
func (s *Store) WatchChanges(ctx context.Context, interval time.Duration, fn func(changefeed.Change)) error {
	if s.reads == nil {
		return errors.ErrUnsupported
	}
	if interval <= 0 {
		interval = DefaultWatchEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	live, last := false, uint64(0)
	for {
		epoch, ok := s.reads.check(ctx)
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
