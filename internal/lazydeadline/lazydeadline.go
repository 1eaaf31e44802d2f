// Package lazydeadline is context.WithDeadline whose timer starts only
// when something first waits on the context. httpx bounds every request's
// waits on its stores with a deadline, yet most requests are answered
// from caches and wait on nothing; making the timer only for those that
// wait gained SQLite's list 5.6% (docs/performance.md).
package lazydeadline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Context is context.WithDeadline(parent, deadline), made at the first
// Done, the call that waits. Until then it reports the deadline and
// answers Err as the made context would. Values are parent's. A context
// derived from it learns of its end through a goroutine of the context
// package, as from any Context that is not the package's own.
type Context struct {
	context.Context // the parent
	deadline        time.Time
	once            sync.Once
	made, stopped   atomic.Bool
	timed           context.Context
	cancel          context.CancelFunc
}

// WithDeadline returns a Context of parent that is done at deadline, at
// parent's end, or at Stop, whichever comes first. Its deadline is
// parent's when that is earlier.
func WithDeadline(parent context.Context, deadline time.Time) *Context {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &Context{Context: parent, deadline: deadline}
}

func (c *Context) make() context.Context {
	c.once.Do(func() {
		c.timed, c.cancel = context.WithDeadline(c.Context, c.deadline)
		c.made.Store(true)
	})
	if c.stopped.Load() { // Stop may have missed it being made
		c.cancel()
	}
	return c.timed
}

// Deadline reports the deadline.
func (c *Context) Deadline() (time.Time, bool) { return c.deadline, true }

// Done makes the timed context and returns its channel.
func (c *Context) Done() <-chan struct{} { return c.make().Done() }

// Err is context.DeadlineExceeded once the deadline has passed, parent's
// error once it has ended, and context.Canceled after Stop. It does not
// make the timed context: stores ask it before their work
// (ratelimit.MemoryStore does on every request).
func (c *Context) Err() error {
	if c.made.Load() {
		return c.timed.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.stopped.Load() {
		return context.Canceled
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Stop ends the context and releases its timer, as a context.CancelFunc
// does, without making the timed context if nothing did.
func (c *Context) Stop() {
	c.stopped.Store(true)
	if c.made.Load() { // else make sees stopped
		c.cancel()
	}
}
