package customdomain

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore/changefeed"
)

// applyTimeout bounds one reload started by Apply.
const applyTimeout = 10 * time.Second

// follower coalesces the reloads Apply asks for: at most one runs at a
// time, and changes that arrive while it runs cost one more reload, not
// one each.
type follower struct {
	pending atomic.Bool // a reload is wanted
	running atomic.Bool // a goroutine is reloading
}

// Apply applies a change received from the change feed the engines of a
// deployment share (EngineConfig.Feed): a changefeed.KindDomain change
// means another process changed a domain's routing, so this engine reloads
// its routing table from the store now rather than at the next periodic
// refresh; changefeed.KindLive (the subscription started or came back, and
// changes may have been missed meanwhile) reloads too. While the feed is
// lost (changefeed.KindLost) the periodic refresh of Run, every
// RefreshEvery, is what brings other processes' changes; it runs whether
// or not a feed is live. Other kinds are ignored.
//
// Apply returns at once; the reload runs in the background, typically
// within milliseconds. It is safe to call from a feed's subscription.
func (e *Engine) Apply(c changefeed.Change) {
	switch c.Kind {
	case changefeed.KindDomain, changefeed.KindLive:
	default:
		return
	}
	e.follow.pending.Store(true)
	if e.follow.running.CompareAndSwap(false, true) {
		go e.drainReloads()
	}
}

func (e *Engine) drainReloads() {
	for {
		for e.follow.pending.Swap(false) {
			ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
			if err := e.reloadRoutes(ctx, false); err != nil {
				e.cfg.Logger.Warn("routing table reload after a change from another process failed; the periodic refresh retries", "err", err)
			}
			cancel()
		}
		e.follow.running.Store(false)
		// A change that arrived after the last Swap but before running was
		// cleared found running set and left it to this goroutine.
		if !e.follow.pending.Load() || !e.follow.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// publish tells the other processes sharing the store that the routing
// of names changed (EngineConfig.Feed), after the change is stored. A
// failure is logged: they then see it at their next periodic refresh.
func (e *Engine) publish(ctx context.Context, names ...string) {
	if e.cfg.Feed == nil {
		return
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if err := e.cfg.Feed.Publish(ctx, changefeed.Change{Kind: changefeed.KindDomain, ID: name}); err != nil {
			e.cfg.Logger.Warn("domain change not published: other processes apply it at their next refresh",
				"domain", name, "within", e.cfg.RefreshEvery, "err", err)
		}
	}
}
