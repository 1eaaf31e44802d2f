package redisfeed_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/adapters/redisfeed"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/changefeed/feedtest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

func TestFeed(t *testing.T) {
	testenv.RedisURL(t)
	feedtest.Run(t, func(t *testing.T) (a, b changefeed.Feed) {
		ca, cb := testenv.RedisClient(t), testenv.RedisClient(t)
		// A channel of its own, so that parallel tests do not hear each
		// other's changes.
		prefix := testenv.RedisPrefix(t, ca, "feed")
		return redisfeed.New(ca, prefix), redisfeed.New(cb, prefix)
	})
}

// TestLostConnection kills the subscription's connection on the server:
// the subscriber hears KindLost, then KindLive once it has subscribed
// again, and then changes again.
func TestLostConnection(t *testing.T) {
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	o.ClientName = "petstore-test-feed-" + hex.EncodeToString(b)
	sub := redis.NewClient(o)
	t.Cleanup(func() { sub.Close() })
	admin := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, admin, "feed")
	pub := redisfeed.New(admin, prefix)

	r := feedtest.Subscribe(t, redisfeed.New(sub, prefix))
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})

	ctx := context.Background()
	kill(t, admin, o.ClientName)
	r.Want(t, changefeed.Change{Kind: changefeed.KindLost})
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	c := changefeed.Change{Kind: changefeed.KindKey, ID: "key_after"}
	if err := pub.Publish(ctx, c); err != nil {
		t.Fatal(err)
	}
	r.Want(t, c)
}

// kill has Redis close every connection named name, and fails t when
// there is none.
func kill(t *testing.T, admin *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(" "+line+" ", " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatal(err)
				}
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no connection named %s in CLIENT LIST:\n%s", name, list)
	}
}

// TestRedisDown: with nothing listening, Publish fails and Subscribe keeps
// retrying, quietly, until its context ends.
func TestRedisDown(t *testing.T) {
	o, _ := redislimit.ParseOptions("127.0.0.1:1")
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	f := redisfeed.New(c, "petstore-test:")
	ctx := context.Background()
	if err := f.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "k"}); err == nil {
		t.Fatal("Publish to a closed port succeeded")
	}
	errs := make(chan error, 16)
	f.OnError = func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	delivered := make(chan changefeed.Change, 16)
	go func() { done <- f.Subscribe(sctx, func(c changefeed.Change) { delivered <- c }) }()
	for range 2 { // it tries again after the first failure
		select {
		case <-errs:
		case <-time.After(10 * time.Second):
			t.Fatal("no error reported")
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Subscribe returned %v", err)
	}
	if len(delivered) != 0 {
		t.Fatalf("delivered %v without ever being live", <-delivered)
	}
}

// TestSilentPartition: when Redis stops answering without closing the
// connection, the subscriber's pings go unanswered and it reports
// KindLost; once Redis is reachable again, KindLive.
func TestSilentPartition(t *testing.T) {
	proxy, c := testenv.ProxiedRedis(t)
	f := redisfeed.New(c, testenv.RedisPrefix(t, testenv.RedisClient(t), "feed"))
	f.HealthInterval = 100 * time.Millisecond
	r := feedtest.Subscribe(t, f)
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	proxy.Pause()
	r.Want(t, changefeed.Change{Kind: changefeed.KindLost})
	proxy.Restore()
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
}

// TestFaults: under every fault of the subscriber's link to Redis, a
// change reaches it, or it reports that it may have missed it, within the
// 1 s staleness bound of docs/keys.md (it notices within twice
// DefaultHealthInterval, 800 ms): what a cache that follows it relies on.
func TestFaults(t *testing.T) {
	testenv.RedisURL(t)
	feedtest.RunFaults(t, time.Second, func(t *testing.T) (proxied, direct changefeed.Feed, faults feedtest.Faults) {
		proxy, c := testenv.ProxiedRedis(t)
		d := testenv.RedisClient(t)
		prefix := testenv.RedisPrefix(t, d, "feed")
		return redisfeed.New(c, prefix), redisfeed.New(d, prefix), proxy
	})
}

// TestLargeStrayMessagesAreDropped: messages on the channel far over
// changefeed.MaxPayload, each arriving in many reads, are dropped as
// docs say, and never break the subscription. A read that timed out
// inside one left its rest to be parsed as the next reply: the
// subscription broke (or a payload passed for a pong).
func TestLargeStrayMessagesAreDropped(t *testing.T) {
	_, c := testenv.ProxiedRedis(t)
	d := testenv.RedisClient(t)
	f := redisfeed.New(c, testenv.RedisPrefix(t, d, "feed"))
	// Frequent pings make reads with short deadlines: many chances to
	// end one inside a message.
	f.HealthInterval = 20 * time.Millisecond
	var mu sync.Mutex
	var broken []string // why the subscription broke, but for a late pong
	f.OnError = func(err error) {
		if msg := err.Error(); !strings.Contains(msg, "dropped a message") && !strings.Contains(msg, "did not answer a ping") {
			mu.Lock()
			broken = append(broken, msg[:min(len(msg), 200)])
			mu.Unlock()
		}
	}
	r := feedtest.Follow(t, f)
	r.WaitLive(t)
	ctx := context.Background()
	stray := "key:" + strings.Repeat("k", 256<<10)
	for range 200 {
		if err := d.Publish(ctx, f.Channel(), stray).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // within Redis's output buffer limit for subscribers
	}
	// The strays may keep a pong late on a loaded machine, and the feed
	// then says KindLost, as it must; but a message read in two halves
	// broke the subscription ("can't parse"), or could pass a payload
	// off as a pong.
	pub := redisfeed.New(d, strings.TrimSuffix(f.Channel(), "changes"))
	r.Reaches(t, pub, time.Second, changefeed.Change{Kind: changefeed.KindKey, ID: "key_after"})
	mu.Lock()
	defer mu.Unlock()
	if len(broken) > 0 {
		t.Fatalf("the strays broke the subscription %d times: %q", len(broken), broken)
	}
}

// TestClosedWhileTheLinkIsPaused: Redis closes the
// subscription's connection while the link to it has stopped answering
// (a restarted Redis behind a route that drops packets). go-redis then
// reconnects the subscription by itself, and holds it while the new
// connection's handshake waits for an answer, up to the client's read
// timeout; the subscription must report KindLost within its bound all
// the same, not once that handshake gives up.
func TestClosedWhileTheLinkIsPaused(t *testing.T) {
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, o.Addr)
	o.Addr = proxy.Addr()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	o.ClientName = "petstore-test-feed-" + hex.EncodeToString(b)
	sub := redis.NewClient(o)
	t.Cleanup(func() { sub.Close() })
	admin := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, admin, "feed")
	r := feedtest.Follow(t, redisfeed.New(sub, prefix))
	r.WaitLive(t)

	proxy.Pause() // the proxy still passes a close on: the kill is seen at once
	defer proxy.Restore()
	kill(t, admin, o.ClientName)
	// The 1 s staleness bound of docs/keys.md, as TestFaults: the feed
	// notices within two health intervals, 800 ms.
	r.Reaches(t, redisfeed.New(admin, prefix), time.Second, changefeed.Change{Kind: changefeed.KindKey, ID: "key_killed"})
}

// TestPublishOverAnIdleConnectionDroppedSilently: a NAT or firewall
// drops the client's pooled connection while it is idle, without a word
// (a black hole: the proxy it went through is paused), while new
// connections get through. The next Publish used to wait for that
// connection's answer until the client's read timeout, or its deadline,
// and fail; it now gives the connection up then, or once half of its
// time has passed, and publishes on another.
func TestPublishOverAnIdleConnectionDroppedSilently(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration // of the publish; 0: none
	}{
		{"without a deadline", 0},
		{"with a deadline", 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := redislimit.ParseOptions(testenv.RedisURL(t))
			if err != nil {
				t.Fatal(err)
			}
			dropped := faultproxy.Start(t, o.Addr) // the pooled connection's path
			fresh := faultproxy.Start(t, o.Addr)   // every later connection's
			var dials atomic.Int32
			var d net.Dialer
			o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
				addr := fresh.Addr()
				if dials.Add(1) == 1 {
					addr = dropped.Addr()
				}
				return d.DialContext(ctx, network, addr)
			}
			c := redis.NewClient(o)
			t.Cleanup(func() { c.Close() })
			direct := testenv.RedisClient(t)
			prefix := testenv.RedisPrefix(t, direct, "feed")
			pub := redisfeed.New(c, prefix)
			r := feedtest.Subscribe(t, redisfeed.New(direct, prefix))
			r.Want(t, changefeed.Change{Kind: changefeed.KindLive})

			ctx := context.Background()
			first := changefeed.Change{Kind: changefeed.KindKey, ID: "first"}
			if err := pub.Publish(ctx, first); err != nil {
				t.Fatal(err)
			}
			r.Want(t, first)

			dropped.Pause()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			after := changefeed.Change{Kind: changefeed.KindKey, ID: "after"}
			started := time.Now()
			if err := pub.Publish(ctx, after); err != nil {
				t.Fatalf("Publish after its idle connection was dropped: %v after %v", err, time.Since(started).Round(time.Millisecond))
			}
			r.Want(t, after)
		})
	}
}

// TestPublishOverASlowLinkKeepsItsConnection: a pooled connection is
// not given up merely for being slow. Over a link whose round trip
// (500 ms) exceeds the health interval, a publish with 1.5 s of time is
// answered on it in one round trip; a new connection would need more.
func TestPublishOverASlowLinkKeepsItsConnection(t *testing.T) {
	proxy, c := testenv.ProxiedRedis(t)
	pub := redisfeed.New(c, testenv.RedisPrefix(t, testenv.RedisClient(t), "feed"))
	ctx := context.Background()
	if err := pub.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	proxy.SetLatency(250 * time.Millisecond)
	defer proxy.Restore()
	for i := range 3 {
		pctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		err := pub.Publish(pctx, changefeed.Change{Kind: changefeed.KindKey, ID: "slow"})
		cancel()
		if err != nil {
			t.Fatalf("publish %d over a slow link: %v", i, err)
		}
	}
}
