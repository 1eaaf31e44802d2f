package pgfeed_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/petstorekit/petstore/adapters/pgfeed"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/changefeed/feedtest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

func random() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// open returns a feed on channel of the test server, its sessions named
// app (application_name) so that a test can find them.
func open(t *testing.T, channel, app string) *pgfeed.Feed {
	t.Helper()
	u, err := url.Parse(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	f, err := pgfeed.New(u.String(), channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFeed(t *testing.T) {
	testenv.PostgresDSN(t)
	feedtest.Run(t, func(t *testing.T) (a, b changefeed.Feed) {
		// A channel of its own, so that parallel tests do not hear each
		// other's changes.
		ch := "petstore_test_" + random()
		return open(t, ch, "petstore-test"), open(t, ch, "petstore-test")
	})
}

// TestLostConnection terminates the listening session on the server: the
// subscriber hears KindLost, then KindLive once it listens again, and then
// changes again.
func TestLostConnection(t *testing.T) {
	ch := "petstore_test_" + random()
	app := "petstore-test-" + random()
	pub := open(t, ch, "petstore-test")
	r := feedtest.Subscribe(t, open(t, ch, app))
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d sessions, %v; want the one listening", n, err)
	}
	r.Want(t, changefeed.Change{Kind: changefeed.KindLost})
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	c := changefeed.Change{Kind: changefeed.KindKey, ID: "key_after"}
	if err := pub.Publish(ctx, c); err != nil {
		t.Fatal(err)
	}
	r.Want(t, c)
}

// TestPublishReconnects: Publish survives the loss of its connection.
func TestPublishReconnects(t *testing.T) {
	ch := "petstore_test_" + random()
	app := "petstore-test-" + random()
	pub := open(t, ch, app)
	r := feedtest.Subscribe(t, open(t, ch, "petstore-test"))
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	ctx := context.Background()
	first := changefeed.Change{Kind: changefeed.KindKey, ID: "first"}
	if err := pub.Publish(ctx, first); err != nil {
		t.Fatal(err)
	}
	r.Want(t, first)

	admin, err := pgx.Connect(ctx, testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app); err != nil {
		t.Fatal(err)
	}
	second := changefeed.Change{Kind: changefeed.KindKey, ID: "second"}
	if err := pub.Publish(ctx, second); err != nil {
		t.Fatalf("Publish after its connection was lost: %v", err)
	}
	r.Want(t, second)
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := pgfeed.New("postgres://x/y?sslmode=bogus", ""); err == nil {
		t.Error("bad DSN accepted")
	}
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'c'
	}
	if _, err := pgfeed.New("postgres://127.0.0.1/x", string(long)); err == nil {
		t.Error("64-byte channel accepted")
	}
	f, err := pgfeed.New("postgres://127.0.0.1/x", "")
	if err != nil || f.Channel() != pgfeed.DefaultChannel {
		t.Fatalf("New = %v, %v; want channel %s", f, err, pgfeed.DefaultChannel)
	}
}

// proxiedFeed is a feed on a channel of its own whose link to
// PostgreSQL goes through a fault proxy, closed when the test ends.
func proxiedFeed(t *testing.T) (*pgfeed.Feed, *faultproxy.Proxy) {
	t.Helper()
	proxy, dsn := faultproxy.StartFor(t, testenv.PostgresDSN(t))
	f, err := pgfeed.New(dsn, "petstore_test_"+random())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, proxy
}

// TestSilentPartition: when PostgreSQL stops answering without closing
// the connection, the subscriber's ping times out and it reports
// KindLost; once the server is reachable again, KindLive.
func TestSilentPartition(t *testing.T) {
	f, proxy := proxiedFeed(t)
	f.HealthInterval = 100 * time.Millisecond
	r := feedtest.Subscribe(t, f)
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	proxy.Pause()
	r.Want(t, changefeed.Change{Kind: changefeed.KindLost})
	proxy.Restore()
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
}

// TestPublishWaitsNoLongerThanItsContext: while one publish without a
// deadline is stuck on a paused link, another with a deadline waits for
// its turn no longer than that deadline, and the stuck one ends after
// DefaultPublishTimeout, not when the pause does.
func TestPublishWaitsNoLongerThanItsContext(t *testing.T) {
	f, proxy := proxiedFeed(t)
	if err := f.Publish(context.Background(), changefeed.Change{Kind: "domain", ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	proxy.Pause()
	defer proxy.Restore()
	stuck := make(chan error, 1)
	started := time.Now()
	go func() { stuck <- f.Publish(context.Background(), changefeed.Change{Kind: "domain", ID: "stuck"}) }()
	for len(stuck) == 0 && time.Since(started) < 100*time.Millisecond { // let it take its turn first
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	bounded := make(chan error, 1)
	go func() { bounded <- f.Publish(ctx, changefeed.Change{Kind: "key", ID: "key_1"}) }()
	select {
	case err := <-bounded:
		if err == nil {
			t.Fatal("a publish through a paused link succeeded")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a publish with a 200 ms deadline is still waiting behind a stuck one after 3 s")
	}
	select {
	case err := <-stuck:
		if err == nil {
			t.Fatal("the stuck publish succeeded through a paused link")
		}
	case <-time.After(pgfeed.DefaultPublishTimeout + 5*time.Second): // a hang guard
		t.Fatal("a publish without a deadline outlived DefaultPublishTimeout")
	}
}

// TestFaults: under every fault of the subscriber's link to PostgreSQL, a
// change reaches it, or it reports that it may have missed it, within the
// 1 s staleness bound of docs/keys.md (it notices within twice
// DefaultHealthInterval, 800 ms): what a cache that follows it relies on.
func TestFaults(t *testing.T) {
	testenv.PostgresDSN(t)
	feedtest.RunFaults(t, time.Second, func(t *testing.T) (proxied, direct changefeed.Feed, faults feedtest.Faults) {
		f, proxy := proxiedFeed(t)
		return f, open(t, f.Channel(), "petstore-test"), proxy
	})
}

// withSearchPath is the test server's DSN choosing schema (which need not
// exist: nothing is read from it).
func withSearchPath(t *testing.T, schema string) string {
	t.Helper()
	u, err := url.Parse(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestSchemasHaveFeedsOfTheirOwn: deployments in two schemas of one
// database, each on the default channel, hear their own changes and not
// the other's.
func TestSchemasHaveFeedsOfTheirOwn(t *testing.T) {
	feed := func(schema string) *pgfeed.Feed {
		f, err := pgfeed.New(withSearchPath(t, schema), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := "feed_a_"+random(), "feed_b_"+random()
	inA, inB := feed(a), feed(b)
	r := feedtest.Subscribe(t, inB)
	r.Want(t, changefeed.Change{Kind: changefeed.KindLive})
	ctx := context.Background()
	// The other schema's change is sent first: a listener gets what it
	// hears in commit order, so it would come before its own.
	if err := inA.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "key_of_" + a}); err != nil {
		t.Fatal(err)
	}
	if err := feed(b).Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "key_of_" + b}); err != nil {
		t.Fatal(err)
	}
	r.Want(t, changefeed.Change{Kind: changefeed.KindKey, ID: "key_of_" + b})
	if inA.Channel() == inB.Channel() || inA.Channel() != feed(a).Channel() {
		t.Errorf("channels %q (%s), %q (%s): want one per schema", inA.Channel(), a, inB.Channel(), b)
	}
	long, err := pgfeed.New(withSearchPath(t, strings.Repeat("s", 63)+", public"), "")
	if err != nil || len(long.Channel()) > 63 || long.Channel() == pgfeed.DefaultChannel {
		t.Errorf("a long search_path: channel %v, %v; want one of its own, at most 63 bytes", long, err)
	}
	for _, path := range []string{"public", ""} {
		f, err := pgfeed.New("postgres://127.0.0.1/x?search_path="+path, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.Channel() != pgfeed.DefaultChannel {
			t.Errorf("search_path %q: channel %q, want %s, which servers without one use", path, f.Channel(), pgfeed.DefaultChannel)
		}
	}
}

// sessions counts the server's sessions named app.
func sessions(t *testing.T, app string) int {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPublishAfterCloseOpensNothing: a Publish after Close fails with
// ErrClosed and leaves no session on the server. It used to open a new
// connection that nothing would ever close.
func TestPublishAfterCloseOpensNothing(t *testing.T) {
	ch := "petstore_test_" + random()
	app := "petstore-test-" + random()
	f := open(t, ch, app)
	ctx := context.Background()
	if err := f.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "before"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	err := f.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "after"})
	if !errors.Is(err, pgfeed.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	// Close's Terminate ends the first session soon; a Publish after it
	// must not have started another.
	n := sessions(t, app)
	for deadline := time.Now().Add(5 * time.Second); n > 0 && time.Now().Before(deadline); n = sessions(t, app) {
		time.Sleep(50 * time.Millisecond)
	}
	if n != 0 {
		t.Fatalf("%d sessions named %s remain after Close", n, app)
	}
}

// TestCloseEndsAPublishUnderWay: Close does not wait for a publish stuck
// on a paused link until that publish's deadline; the publish ends with
// ErrClosed. A server shutting down used to hang that long.
func TestCloseEndsAPublishUnderWay(t *testing.T) {
	f, proxy := proxiedFeed(t)
	proxy.Pause()
	defer proxy.Restore()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stuck := make(chan error, 1)
	go func() { stuck <- f.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: "stuck"}) }()
	time.Sleep(100 * time.Millisecond) // connecting through the paused link
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	const prompt = time.Second
	select {
	case <-closed:
	case <-time.After(prompt):
		t.Fatalf("Close still waits for a stuck publish after %v", prompt)
	}
	select {
	case err := <-stuck:
		if !errors.Is(err, pgfeed.ErrClosed) {
			t.Fatalf("the publish under way returned %v, want ErrClosed", err)
		}
	case <-time.After(prompt):
		t.Fatalf("the publish under way still runs %v after Close returned", prompt)
	}
}
