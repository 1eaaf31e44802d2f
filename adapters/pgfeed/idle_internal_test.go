package pgfeed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/changefeed/feedtest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestPublishOverAnIdleConnectionDroppedSilently: a NAT or firewall
// drops Publish's kept connection while it is idle, without a word (a
// black hole: the proxy it went through is paused), while new
// connections get through. The next Publish used to wait for that
// connection's answer until its deadline (DefaultPublishTimeout) and
// fail; it now takes the connection for dead once half of its time has
// passed, and publishes on a new one.
func TestPublishOverAnIdleConnectionDroppedSilently(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dropped := faultproxy.Start(t, u.Host) // the kept connection's path
	fresh := faultproxy.Start(t, u.Host)   // every later connection's
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	channel := "petstore_test_" + hex.EncodeToString(b)
	pub, err := New(dsn, channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	var dials atomic.Int32
	var d net.Dialer
	pub.config.DialFunc = func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := fresh.Addr()
		if dials.Add(1) == 1 {
			addr = dropped.Addr()
		}
		return d.DialContext(ctx, network, addr)
	}
	sub, err := New(dsn, channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	r := feedtest.Subscribe(t, sub)
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})

	ctx := context.Background()
	first := changefeed.Change{Kind: changefeed.KindKey, ID: "first"}
	if err := pub.Publish(ctx, first); err != nil {
		t.Fatal(err)
	}
	r.Want(t, first)

	dropped.Pause()
	after := changefeed.Change{Kind: changefeed.KindKey, ID: "after"}
	started := time.Now()
	if err := pub.Publish(ctx, after); err != nil {
		t.Fatalf("Publish after its idle connection was dropped: %v after %v", err, time.Since(started).Round(time.Millisecond))
	}
	r.Want(t, after)
}

// TestPublishOverASlowLinkKeepsItsConnection: the kept connection is not
// taken for dead merely for being slow. Over a link whose round trip
// (500 ms) exceeds the health interval, a publish with 1.5 s of time is
// answered on the kept connection in one round trip; a new connection
// would need several, more than that time.
func TestPublishOverASlowLinkKeepsItsConnection(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	proxy, through := faultproxy.StartFor(t, dsn)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	channel := "petstore_test_" + hex.EncodeToString(b)
	pub, err := New(through, channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
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
