package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite has one writer at a time per database file. When many goroutines
// of a process write at once, each would take the write lock in its own
// transaction, and the losers sleep in SQLite's busy handler. Instead, the
// store commits the hot writes (new pets, Idempotency-Key records) in
// groups: the writes that arrive while a transaction is running wait, and
// the next writer runs all of them in one transaction. Every write still
// returns only after the transaction holding it has committed, with the
// durability of the connection settings (WAL, synchronous NORMAL), so a
// 201 is exactly as durable as it was with one transaction per write.
//
// Writes from other processes on the same file still meet at SQLite's
// lock, as before: BEGIN IMMEDIATE and busy_timeout.

// maxGroup bounds how many writes one transaction holds, so that the
// writers queued behind a group do not wait for an unbounded one.
const maxGroup = 128

// groupWrite is one write waiting for its group's commit.
type groupWrite struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	err  error
	done chan struct{} // closed when err is final
}

// groupCommitter runs writes in shared transactions. The goroutine that
// holds token runs one group; the others wait for their write's done, or
// for the token when their write was not in the group.
type groupCommitter struct {
	db    *sql.DB
	token chan struct{} // capacity 1: held while a group runs

	// While WatchChanges runs, every group writes on conn, one pooled
	// connection held for the watch, which reads PRAGMA data_version on
	// it: that moves only for the commits of other connections, so the
	// store's own grouped writes are not reported (watch.go). connGen
	// counts the connections held. Both are guarded by token.
	conn    *sql.Conn
	connGen uint64

	// lockWait is when the running group began waiting for SQLite's write
	// lock (BEGIN IMMEDIATE), in Unix nanoseconds; 0 while none waits.
	lockWait atomic.Int64

	mu    sync.Mutex // guards queue
	queue []*groupWrite
}

func newGroupCommitter(db *sql.DB) *groupCommitter {
	return &groupCommitter{db: db, token: make(chan struct{}, 1)}
}

// do runs fn inside a transaction shared with concurrent writes and
// returns once that transaction has committed or failed. fn must run only
// statements whose failure leaves the transaction open (a constraint
// violation rolls back only its own statement in SQLite); any other error
// rolls the whole group back, and every write in it fails.
func (g *groupCommitter) do(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &groupWrite{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	for {
		select {
		case <-w.done:
			return w.err
		case g.token <- struct{}{}:
		}
		select {
		case <-w.done: // committed by the previous group
			<-g.token
			return w.err
		default:
		}
		// Let the writers that are about to queue do so first: one yield
		// here makes groups several times larger under load (3 to 13
		// writes with 16 writers on 2 cores) and costs nothing when no
		// other goroutine is runnable.
		runtime.Gosched()
		g.mu.Lock()
		group := g.queue
		if len(group) > maxGroup {
			group = group[:maxGroup:maxGroup]
			g.queue = append([]*groupWrite(nil), g.queue[maxGroup:]...)
		} else {
			g.queue = nil
		}
		g.mu.Unlock()
		g.run(group)
		<-g.token
		// w was in the group unless the queue was longer than maxGroup;
		// then wait for the next one.
	}
}

// run executes one group in one transaction and sets every write's error.
func (g *groupCommitter) run(group []*groupWrite) {
	defer func() {
		for _, w := range group {
			close(w.done)
		}
	}()
	// The group outlives any one caller's cancellation: a canceled caller
	// must not roll back the others' writes.
	ctx := context.WithoutCancel(group[0].ctx)
	var tx *sql.Tx
	var err error
	g.lockWait.Store(time.Now().UnixNano())
	if g.conn != nil {
		if tx, err = g.conn.BeginTx(ctx, nil); err != nil {
			g.dropConn() // the watch's next look holds another
		}
	} else {
		tx, err = g.db.BeginTx(ctx, nil)
	}
	g.lockWait.Store(0)
	if err != nil {
		for _, w := range group {
			w.err = err
		}
		return
	}
	ok := make([]*groupWrite, 0, len(group))
	for _, w := range group {
		if w.err = w.ctx.Err(); w.err != nil {
			continue // never started: its caller gets the context's error
		}
		if w.err = w.fn(ctx, tx); w.err == nil {
			ok = append(ok, w)
			continue
		}
		if isConstraint(w.err) {
			continue // only this statement was rolled back
		}
		// Anything else may have ended the transaction already.
		_ = tx.Rollback()
		cause := w.err
		for _, o := range group { // the written ones and the not yet run
			if o.err == nil && o != w {
				o.err = cause
			}
		}
		return
	}
	if err := tx.Commit(); err != nil {
		for _, w := range ok {
			w.err = err
		}
	}
}

// isConstraint reports whether err is a SQLite constraint violation, which
// aborts only the statement that caused it.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// between runs fn while no group runs, or returns ctx's error if one runs
// until ctx is done.
func (g *groupCommitter) between(ctx context.Context, fn func() error) error {
	select {
	case g.token <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.token }()
	return fn()
}

// errLocked says a group has waited too long for SQLite's write lock.
var errLocked = errors.New("bunstore: a write waits for another connection's lock")

// betweenUnlessLocked is between, except that it gives up with errLocked
// once the group running has waited patience for the write lock: another
// connection, likely another process, is writing meanwhile.
func (g *groupCommitter) betweenUnlessLocked(ctx context.Context, patience time.Duration, fn func() error) error {
	t := time.NewTicker(patience / 2)
	defer t.Stop()
	for {
		select {
		case g.token <- struct{}{}:
			defer func() { <-g.token }()
			return fn()
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if w := g.lockWait.Load(); w != 0 && time.Since(time.Unix(0, w)) >= patience {
				return errLocked
			}
		}
	}
}

// dropConn gives the held connection back to the pool, if any; the token
// must be held.
func (g *groupCommitter) dropConn() {
	if g.conn != nil {
		_ = g.conn.Close()
		g.conn = nil
	}
}
