package httpx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/pgfeed"
	"github.com/petstorekit/petstore/adapters/redisfeed"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// feedPair is one feed seen by two processes: one through a fault proxy,
// one directly.
type feedPair struct {
	proxied, direct changefeed.Feed
	proxy           *faultproxy.Proxy
}

func redisFeedPair(t *testing.T) feedPair {
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := faultproxy.Start(t, o.Addr)
	o.Addr = p.Addr()
	pc := redis.NewClient(o)
	t.Cleanup(func() { pc.Close() })
	dc := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, dc, "cachefault")
	return feedPair{redisfeed.New(pc, prefix), redisfeed.New(dc, prefix), p}
}

func pgFeedPair(t *testing.T) feedPair {
	dsn := testenv.PostgresDSN(t)
	channel := fmt.Sprintf("cachefault_%d", time.Now().UnixNano())
	direct, err := pgfeed.New(dsn, channel)
	if err != nil {
		t.Fatal(err)
	}
	p, through := faultproxy.StartFor(t, dsn)
	proxied, err := pgfeed.New(through, channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close(); proxied.Close() })
	return feedPair{proxied, direct, p}
}

// followFeed runs c's subscription to f until the test ends, and waits
// until it is live.
func followFeed(t *testing.T, c *Cache, f changefeed.Feed) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Subscribe(ctx, c.Apply) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second) // a hang guard
	for {
		c.mu.RLock()
		live := c.live
		c.mu.RUnlock()
		if live {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed never went live")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCreateReachesOthersAfterAPause: a create made while this process's
// link to the feed is paused (a black hole) still reaches the other
// processes once it is back, not only when their copies expire
// (CacheMaxAge), on both feeds.
func TestCreateReachesOthersAfterAPause(t *testing.T) {
	for name, pair := range map[string]func(*testing.T) feedPair{"redis": redisFeedPair, "postgres": pgFeedPair} {
		t.Run(name, func(t *testing.T) {
			p := pair(t)
			a, b := NewCache(p.proxied), NewCache(p.direct)
			followFeed(t, a, p.proxied)
			followFeed(t, b, p.direct)
			_, gen := b.get("last")
			b.put("last", gen, &encoded{body: []byte("[]\n"), etag: `"x"`, page: true, lastID: 5})
			kept := func() bool { e, _ := b.get("last"); return e != nil }
			if !kept() {
				t.Fatal("b did not keep the last page")
			}

			p.proxy.Pause()
			a.created(petstore.Pet{ID: 10, Status: petstore.StatusAvailable}, nil)
			time.Sleep(1500 * time.Millisecond) // the pause outlasts a publish's 1 s
			p.proxy.Restore()
			restored := time.Now()
			for kept() {
				if time.Since(restored) > 3*time.Second {
					t.Fatalf("b still serves the page a's create changed, %v after a's link came back", time.Since(restored))
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// cutFeed fails every Publish while cut (a refused link); otherwise it
// hands the change to the other process's cache.
type cutFeed struct {
	mu    sync.Mutex
	cut   bool
	other *Cache
}

func (f *cutFeed) Publish(_ context.Context, c changefeed.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		return errors.New("connection refused")
	}
	f.other.Apply(c)
	return nil
}

func (f *cutFeed) Subscribe(ctx context.Context, _ func(changefeed.Change)) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestLateCreateOfAFailingStreakIsPublished: publishes fail for longer
// than CacheMaxAge, and a create comes late in that streak. The retry
// gives up only CacheMaxAge after the latest create, so once the link is
// back the other process drops the page it read before that create,
// rather than serving it until it expires.
func TestLateCreateOfAFailingStreakIsPublished(t *testing.T) {
	clock := testenv.NewClock(time.Now())
	b := NewCache(&changefeed.Local{}) // the other process, whose copies expire on the clock only
	b.now = clock.Now
	b.Apply(changefeed.Change{Kind: changefeed.KindLive})
	feed := &cutFeed{cut: true, other: b}
	a := NewCache(feed)
	a.now = clock.Now
	a.Apply(changefeed.Change{Kind: changefeed.KindLive})

	a.created(petstore.Pet{ID: 10, Status: petstore.StatusAvailable}, nil) // the failures begin
	time.Sleep(300 * time.Millisecond)                                     // a few of them
	clock.Advance(7 * time.Second)
	_, gen := b.get("last")
	b.put("last", gen, &encoded{body: []byte("[10]\n"), etag: `"x"`, page: true, lastID: 10}) // without pet 11
	a.created(petstore.Pet{ID: 11, Status: petstore.StatusAvailable}, nil)
	clock.Advance(4 * time.Second) // 11 s into the streak, 4 s after pet 11
	time.Sleep(500 * time.Millisecond)
	feed.mu.Lock()
	feed.cut = false // the link is back
	feed.mu.Unlock()
	restored := time.Now()
	for {
		if e, _ := b.get("last"); e == nil {
			return
		}
		if time.Since(restored) > 6*time.Second { // past any backoff: given up
			t.Fatal("the other process still serves the page from before pet 11: the late create was given up with the streak")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
