package customdomain_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/customdomain"
)

// waitRoute polls until e routes host as want; the deadline is a hang
// guard, far beyond any reload, not a timing assertion.
func waitRoute(t *testing.T, e *customdomain.Engine, host string, want customdomain.RouteKind) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Route(host).Kind != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s never routed as %v: %+v", host, want, e.Route(host))
		}
		time.Sleep(time.Millisecond)
	}
}

// feedReplicas builds two engines on f's store sharing a change feed (f's
// own engine has none), configured further by configure when set: a
// publishes, b follows, live by the time it returns.
func feedReplicas(t *testing.T, f *fixture, configure func(*customdomain.EngineConfig)) (a, b *customdomain.Engine) {
	t.Helper()
	feed := &changefeed.Local{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mk := func() *customdomain.Engine {
		return f.replica(t, func(c *customdomain.EngineConfig) {
			c.Feed = feed
			if configure != nil {
				configure(c)
			}
		})
	}
	a, b = mk(), mk()
	live := make(chan struct{})
	go feed.Subscribe(ctx, func(c changefeed.Change) {
		b.Apply(c)
		if c.Kind == changefeed.KindLive {
			close(live)
		}
	})
	<-live
	return a, b
}

// Two engines on one store, sharing a change feed and never refreshing
// periodically: what one does reaches the other through the feed alone —
// activation, redirects and removal.
func TestFeedCarriesChangesToOtherProcesses(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target), cname("www", target))
	ctx := context.Background()
	a, b := feedReplicas(t, f, nil)

	for _, n := range []string{"shop.example.com", "www.example.com"} {
		if _, _, err := a.Add(ctx, "prj_pro", n); err != nil {
			t.Fatal(err)
		}
		if d, err := a.Verify(ctx, "prj_pro", n); err != nil || d.Status != customdomain.StatusActive {
			t.Fatalf("verify %s: %v %+v", n, err, d.Status)
		}
	}
	waitRoute(t, b, "shop.example.com", customdomain.RouteServe)
	waitRoute(t, b, "www.example.com", customdomain.RouteServe)
	if !b.Admits("www.example.com") {
		t.Fatal("www.example.com routed on b but not admitted")
	}

	if _, err := a.SetConfig(ctx, "prj_pro", customdomain.Config{Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, b, "www.example.com", customdomain.RouteRedirect)

	if err := a.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, b, "shop.example.com", customdomain.RouteNone)
	// The redirect to it went with it: www serves again.
	waitRoute(t, b, "www.example.com", customdomain.RouteServe)
	if b.Admits("shop.example.com") {
		t.Fatal("removed domain still admitted on b")
	}
}

// A verified domain that waits for its certificate (issuing) is admitted
// at once by the engine that verified it, and through the feed by the
// others, so that any process can answer the name's TLS handshakes.
func TestFeedCarriesVerifyingToOtherProcesses(t *testing.T) {
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target))
	ctx := context.Background()
	a, b := feedReplicas(t, f, func(c *customdomain.EngineConfig) { c.CertIssuer = certs })

	if _, _, err := a.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, err := a.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusIssuing {
		t.Fatalf("verify: %v %s", err, d.Status)
	}
	if !a.Admits("shop.example.com") {
		t.Fatal("the verifying engine does not admit its issuing domain")
	}
	deadline := time.Now().Add(10 * time.Second) // a hang guard, not a timing assertion
	for !b.Admits("shop.example.com") {
		if time.Now().After(deadline) {
			t.Fatal("another process never admitted the issuing domain")
		}
		time.Sleep(time.Millisecond)
	}
}
