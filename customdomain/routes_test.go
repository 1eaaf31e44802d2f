package customdomain_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// liveFixture has three active domains of prj_pro, one pending, and one
// active domain of prj_business.
func liveFixture(t *testing.T, certs customdomain.CertIssuer) *fixture {
	t.Helper()
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("www", target), cname("old", target), cname("other", target))
	for _, n := range []string{"shop.example.com", "www.example.com", "old.example.com"} {
		f.add(t, "prj_pro", n)
		f.verify(t, "prj_pro", n)
	}
	f.add(t, "prj_pro", "later.example.com")
	f.add(t, "prj_business", "other.example.com")
	f.verify(t, "prj_business", "other.example.com")
	return f
}

func TestSetConfig(t *testing.T) {
	ctx := context.Background()
	f := liveFixture(t, nil)
	f.add(t, "prj_pro", "*.shop.example.com")
	r := func(from, to string, status int) customdomain.Redirect {
		return customdomain.Redirect{From: from, To: to, Status: status}
	}
	for _, tc := range []struct {
		name string
		in   customdomain.Config
		says string // "" means valid
	}{
		{"valid, status defaults to 301", customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 0), r("old.example.com", "shop.example.com", 308)}}, ""},
		{"empty", customdomain.Config{}, ""},
		{"to a pending domain", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "later.example.com", 302)}}, ""},
		{"status 307", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 307)}}, ""},
		{"status 303", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 303)}}, "redirects[0].status must be 301, 302, 307 or 308"},
		{"status 200", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 200)}}, "must be 301, 302, 307 or 308"},
		{"from not attached", customdomain.Config{Redirects: []customdomain.Redirect{r("nope.example.com", "shop.example.com", 0)}}, "redirects[0].from: nope.example.com is not a domain of this project"},
		{"to another project's", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "other.example.com", 0)}}, "redirects[0].to: other.example.com is not a domain of this project"},
		{"primary not attached", customdomain.Config{Primary: "other.example.com"}, "primary: other.example.com is not a domain of this project"},
		{"invalid name", customdomain.Config{Redirects: []customdomain.Redirect{r("a.*.example.com", "shop.example.com", 0)}}, "redirects[0].from: \"a.*.example.com\" is not a valid wildcard"},
		{"from the primary", customdomain.Config{Primary: "www.example.com", Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 0)}}, "primary domain, which cannot redirect"},
		{"to itself", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "WWW.example.com", 0)}}, "cannot redirect to itself"},
		{"chain", customdomain.Config{Redirects: []customdomain.Redirect{r("old.example.com", "www.example.com", 0), r("www.example.com", "shop.example.com", 0)}}, "redirects[0].to: www.example.com redirects too"},
		{"loop", customdomain.Config{Redirects: []customdomain.Redirect{r("old.example.com", "www.example.com", 0), r("www.example.com", "old.example.com", 0)}}, "chain or a loop"},
		{"from a wildcard", customdomain.Config{Redirects: []customdomain.Redirect{r("*.shop.example.com", "shop.example.com", 0)}}, ""},
		{"to a wildcard", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "*.shop.example.com", 0)}}, "redirects[0].to: *.shop.example.com is a wildcard"},
		{"primary a wildcard", customdomain.Config{Primary: "*.shop.example.com"}, "primary: *.shop.example.com is a wildcard"},
		{"twice from one name", customdomain.Config{Redirects: []customdomain.Redirect{r("www.example.com", "shop.example.com", 0), r("www.example.com", "old.example.com", 0)}}, "already redirects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.engine.SetConfig(ctx, "prj_pro", tc.in)
			if tc.says != "" {
				wantCode(t, err, petstore.CodeInvalidRequest)
				if !strings.Contains(petstore.ErrorMessage(err), tc.says) {
					t.Fatalf("message %q does not say %q", petstore.ErrorMessage(err), tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, rd := range got.Redirects {
				if rd.Status == 0 {
					t.Fatalf("stored status 0 in %+v", got)
				}
			}
			stored, err := f.engine.Config(ctx, "prj_pro")
			if err != nil || fmt.Sprint(stored) != fmt.Sprint(got) || stored.Redirects == nil {
				t.Fatalf("Config = %+v (%v), want %+v", stored, err, got)
			}
		})
	}
}

// TestRedirectGoesToItsOwnTarget: each redirect sends its from to its
// own to, which need not be the primary, as docs/custom-domains.md says.
func TestRedirectGoesToItsOwnTarget(t *testing.T) {
	ctx := context.Background()
	f := liveFixture(t, nil)
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{
		{From: "www.example.com", To: "old.example.com", Status: 302},
	}}); err != nil {
		t.Fatal(err)
	}
	want := customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: "www.example.com", ProjectID: "prj_pro", RedirectTo: "old.example.com", Status: 302}
	if got := f.engine.Route("www.example.com"); got != want {
		t.Fatalf("Route(www.example.com) = %+v, want %+v", got, want)
	}
}

// TestRedirectWaitsForItsTargetToGoLive: a redirect may be configured to
// a domain still pending, but until that domain is served, its from
// serves the project as before instead of sending visitors to a name
// that answers 404; once the target is active, the redirect applies.
// Before, www.example.com redirected at once to a pending name, and its
// visitors landed on 404.
func TestRedirectWaitsForItsTargetToGoLive(t *testing.T) {
	ctx := context.Background()
	f := liveFixture(t, nil)
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Redirects: []customdomain.Redirect{
		{From: "www.example.com", To: "later.example.com"},
	}}); err != nil {
		t.Fatal(err)
	}
	serve := customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "www.example.com", ProjectID: "prj_pro"}
	if got := f.engine.Route("www.example.com"); got != serve {
		t.Fatalf("redirect to a pending domain: Route(www.example.com) = %+v, want %+v until it is live", got, serve)
	}
	f.set(t, "example.com.", cname("shop", target), cname("www", target), cname("old", target), cname("other", target), cname("later", target))
	if d := f.verify(t, "prj_pro", "later.example.com"); d.Status != customdomain.StatusActive {
		t.Fatalf("Verify(later.example.com) = %s, want active", d.Status)
	}
	redirect := customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: "www.example.com", ProjectID: "prj_pro", RedirectTo: "later.example.com", Status: 301}
	if got := f.engine.Route("www.example.com"); got != redirect {
		t.Fatalf("target live: Route(www.example.com) = %+v, want %+v", got, redirect)
	}
}

func TestRoutingFollowsConfig(t *testing.T) {
	ctx := context.Background()
	f := liveFixture(t, nil)
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{
		{From: "www.example.com", To: "shop.example.com"},
		{From: "old.example.com", To: "shop.example.com", Status: 308},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		want customdomain.RouteAnswer
	}{
		{"shop.example.com", customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "shop.example.com", ProjectID: "prj_pro"}},
		{"SHOP.Example.COM:8080", customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "shop.example.com", ProjectID: "prj_pro"}},
		{"shop.example.com.", customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "shop.example.com", ProjectID: "prj_pro"}},
		{"www.example.com", customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: "www.example.com", ProjectID: "prj_pro", RedirectTo: "shop.example.com", Status: 301}},
		{"old.example.com:443", customdomain.RouteAnswer{Kind: customdomain.RouteRedirect, Name: "old.example.com", ProjectID: "prj_pro", RedirectTo: "shop.example.com", Status: 308}},
		{"other.example.com", customdomain.RouteAnswer{Kind: customdomain.RouteServe, Name: "other.example.com", ProjectID: "prj_business"}},
		{"later.example.com", customdomain.RouteAnswer{Kind: customdomain.RouteNone, Name: "later.example.com"}},
		{"unknown.example.com", customdomain.RouteAnswer{Kind: customdomain.RouteNone, Name: "unknown.example.com"}},
		{"localhost:8080", customdomain.RouteAnswer{Kind: customdomain.RouteNone, Name: "localhost"}},
		{"[::1]:8080", customdomain.RouteAnswer{Kind: customdomain.RouteNone, Name: "[::1]"}},
		{"", customdomain.RouteAnswer{Kind: customdomain.RouteNone}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := f.engine.Route(tc.host); got != tc.want {
				t.Fatalf("Route(%q) = %+v, want %+v", tc.host, got, tc.want)
			}
		})
	}
}

func TestRouteUnicodeHost(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "xn--bcher-kva.example.", cname("laden", target))
	f.add(t, "prj_pro", "laden.bücher.example")
	f.verify(t, "prj_pro", "laden.xn--bcher-kva.example")
	for _, host := range []string{"laden.xn--bcher-kva.example", "laden.bücher.example", "LADEN.BÜCHER.example:80"} {
		if got := f.engine.Route(host); got.Kind != customdomain.RouteServe || got.Name != "laden.xn--bcher-kva.example" {
			t.Fatalf("Route(%q) = %+v, want served", host, got)
		}
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("www", target))
	for _, n := range []string{"shop.example.com", "www.example.com"} {
		f.add(t, "prj_pro", n)
		f.verify(t, "prj_pro", n)
		certs.set(n, customdomain.CertStatus{State: customdomain.CertIssued})
		if err := f.engine.CertificateChanged(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.engine.SetConfig(ctx, "prj_pro", customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("www.example.com"); got.Kind != customdomain.RouteRedirect {
		t.Fatalf("before removal Route(www) = %+v", got)
	}
	f.clock.Advance(time.Hour)
	if err := f.engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	// Stops at once: no Refresh, no waiting.
	for _, host := range []string{"shop.example.com", "www.example.com"} {
		if got := f.engine.Route(host); got.Kind == customdomain.RouteRedirect || host == "shop.example.com" && got.Kind != customdomain.RouteNone {
			t.Fatalf("after removal Route(%s) = %+v", host, got)
		}
	}
	if got := f.engine.Route("www.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("www (redirect dropped) should serve itself, got %+v", got)
	}
	if fmt.Sprint(certs.removed) != "[shop.example.com]" {
		t.Fatalf("issuer removed %v, want [shop.example.com]", certs.removed)
	}
	c, _ := f.engine.Config(ctx, "prj_pro")
	if c.Primary != "" || len(c.Redirects) != 0 {
		t.Fatalf("config after removal = %+v, want no primary and no redirects", c)
	}
	_, err := f.engine.Get(ctx, "prj_pro", "shop.example.com")
	wantCode(t, err, petstore.CodeNotFound)
	wantCode(t, f.engine.Remove(ctx, "prj_pro", "shop.example.com"), petstore.CodeNotFound)
	// History is kept; the name is free for another project.
	old, _ := f.store.ListDomains(ctx, customdomain.DomainQuery{ProjectID: "prj_pro", Status: customdomain.StatusRemoved})
	if len(old) != 1 || old[0].History[len(old[0].History)-1].Status != customdomain.StatusRemoved || !old[0].History[len(old[0].History)-1].At.Equal(f.clock.Now()) {
		t.Fatalf("removed entries = %+v", old)
	}
	if d := f.add(t, "prj_business", "shop.example.com"); d.Status != customdomain.StatusPending {
		t.Fatalf("re-added by another project: %+v", d)
	}
}

// TestOtherProcessSeesChanges runs two engines on one store, as two
// processes sharing a database would.
func TestOtherProcessSeesChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	other := f.replica(t, nil)
	f.add(t, "prj_pro", "shop.example.com")
	f.verify(t, "prj_pro", "shop.example.com")
	if got := other.Route("shop.example.com"); got.Kind != customdomain.RouteNone {
		t.Fatalf("other process before Refresh: %+v", got)
	}
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Route("shop.example.com"); got.Kind != customdomain.RouteServe {
		t.Fatalf("other process after Refresh: %+v", got)
	}
	if err := other.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.engine.Route("shop.example.com"); got.Kind != customdomain.RouteNone {
		t.Fatalf("first process after the other removed it and Refresh: %+v", got)
	}
}

func TestRunRefreshesUntilCancelled(t *testing.T) {
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_pro", "shop.example.com")
	other := f.replica(t, func(c *customdomain.EngineConfig) { c.RefreshEvery = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- other.Run(ctx) }()
	f.verify(t, "prj_pro", "shop.example.com")
	deadline := time.After(10 * time.Second) // a hang guard, not a timing assertion
	for other.Route("shop.example.com").Kind != customdomain.RouteServe {
		select {
		case <-deadline:
			t.Fatal("Run never picked up the change")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

// stuckResolver answers lookups of names below stuck only when the
// lookup's context ends: nameservers that never answer.
type stuckResolver struct {
	customdomain.Resolver
	stuck string
}

func (s stuckResolver) Lookup(ctx context.Context, name, typ string) ([]customdomain.Record, error) {
	if strings.HasSuffix(strings.TrimSuffix(name, "."), s.stuck) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Resolver.Lookup(ctx, name, typ)
}

// TestRunRefreshesWhileChecksHang: Run's reloads never wait for its DNS
// checks, so a domain another process removed stops being served within
// RefreshEvery even while the checks of pending domains hang.
func TestRunRefreshesWhileChecksHang(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_pro", "shop.example.com")
	f.verify(t, "prj_pro", "shop.example.com")
	for _, n := range []string{"a", "b", "c"} {
		f.add(t, "prj_pro", n+".slow.example.com")
	}
	f.clock.Advance(2 * time.Minute) // their next checks are due
	other := f.replica(t, func(c *customdomain.EngineConfig) {
		c.RefreshEvery = 10 * time.Millisecond
		c.Resolver = stuckResolver{Resolver: c.Resolver, stuck: "slow.example.com"}
	})
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- other.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	if err := f.engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	// Without the fix the reload waits for the hanging checks: never.
	waitRoute(t, other, "shop.example.com", customdomain.RouteNone)
}

func BenchmarkRoute(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, nil)
	for i := range 10000 {
		if _, err := f.store.CreateDomain(ctx, customdomain.Entry{ID: fmt.Sprint("dom_", i), ProjectID: "prj_pro", Name: fmt.Sprintf("site%d.example.com", i), Status: customdomain.StatusActive}); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.engine.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	for _, host := range []string{"site42.example.com", "Site42.Example.com:8443", "unknown.example.com"} {
		b.Run(host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.engine.Route(host)
			}
		})
	}
}

// Admits answers a TLS handshake's question "may this name be served?"
// from memory: verified, issuing and active names, in any form, and not
// removed ones (at once), pending or unknown ones.
func TestAdmits(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("live", target), cname("gone", target))
	for _, n := range []string{"shop.example.com", "live.example.com", "gone.example.com", "later.example.com"} {
		f.add(t, "prj_pro", n)
	}
	for _, n := range []string{"shop.example.com", "live.example.com", "gone.example.com"} {
		f.verify(t, "prj_pro", n) // issuing
	}
	certs.set("live.example.com", customdomain.CertStatus{State: customdomain.CertIssued})
	if err := f.engine.CertificateChanged(ctx, "live.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.engine.Remove(ctx, "prj_pro", "gone.example.com"); err != nil {
		t.Fatal(err)
	}
	other := f.replica(t, nil)
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"shop.example.com", true},  // issuing: on-demand may still obtain it
		{"LIVE.Example.com.", true}, // active, any form
		{"gone.example.com", false}, // removed
		{"later.example.com", false},
		{"unknown.example.com", false},
		{"", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := f.engine.Admits(tc.host); got != tc.want {
				t.Fatalf("Admits(%q) = %v, want %v", tc.host, got, tc.want)
			}
			if got := other.Admits(tc.host); got != tc.want {
				t.Fatalf("another process after Refresh: Admits(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

func BenchmarkAdmits(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, nil)
	for i := range 10000 {
		if _, err := f.store.CreateDomain(ctx, customdomain.Entry{ID: fmt.Sprint("dom_", i), ProjectID: "prj_pro", Name: fmt.Sprintf("site%d.example.com", i), Status: customdomain.StatusIssuing}); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.engine.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	for _, host := range []string{"site42.example.com", "Site42.Example.com", "unknown.example.com"} {
		b.Run(host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.engine.Admits(host)
			}
		})
	}
}

// countingResolver counts the lookups of one name through a real resolver.
type countingResolver struct {
	customdomain.Resolver
	name string
	n    atomic.Int64
}

func (c *countingResolver) Lookup(ctx context.Context, name, rrtype string) ([]customdomain.Record, error) {
	if name == c.name {
		c.n.Add(1)
	}
	return c.Resolver.Lookup(ctx, name, rrtype)
}

// Without EdgeIPs the edge's addresses are what the CNAME target resolves
// to, looked up at each Refresh: views show them without a lookup of their
// own, and a changed address shows after the next Refresh.
func TestEdgeAddressesFollowTheTargetPerRefresh(t *testing.T) {
	ctx := context.Background()
	var resolver *countingResolver
	w := domaintest.New(t, domaintest.Options{
		Zones: []string{"example.org.", "petstore.example."}, Projects: projects,
		Config: func(c *customdomain.EngineConfig) {
			resolver = &countingResolver{Resolver: c.Resolver, name: target}
			c.Resolver, c.EdgeIPs = resolver, nil
		},
	})
	w.Set(t, "petstore.example.", libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("192.0.2.10")})
	if err := w.Engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "example.org"); err != nil {
		t.Fatal(err)
	}
	alternatives := func() string {
		t.Helper()
		ds, err := w.Engine.List(ctx, "prj_pro")
		if err != nil || len(ds) != 1 {
			t.Fatalf("List = %d domains, %v", len(ds), err)
		}
		var vals []string
		for _, r := range ds[0].Alternatives {
			vals = append(vals, r.Value)
		}
		return strings.Join(vals, ",")
	}
	before := resolver.n.Load()
	for range 5 {
		if got := alternatives(); got != "192.0.2.10" {
			t.Fatalf("apex alternatives %q, want the target's 192.0.2.10", got)
		}
	}
	if n := resolver.n.Load() - before; n != 0 {
		t.Fatalf("5 views looked the target up %d times, want 0", n)
	}

	w.Set(t, "petstore.example.", libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("192.0.2.20")})
	if err := w.Engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := alternatives(); got != "192.0.2.20" {
		t.Fatalf("after the target moved and a Refresh: %q, want 192.0.2.20", got)
	}
}

// Views read the certificate layer's answer as the engine last read it:
// once per domain after each Refresh, and again after a change the layer
// reports (CertificateChanged) or the engine makes.
func TestViewsAskTheCertificateLayerOncePerRefresh(t *testing.T) {
	ctx := context.Background()
	certs := &issuer{state: map[string]customdomain.CertStatus{}}
	f := newFixture(t, certs)
	f.set(t, "example.com.", cname("shop", target), cname("blog", target))
	for _, n := range []string{"shop.example.com", "blog.example.com"} {
		f.add(t, "prj_pro", n)
		if d := f.verify(t, "prj_pro", n); d.Status != customdomain.StatusIssuing {
			t.Fatalf("verify %s: %s, want issuing", n, d.Status)
		}
	}
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	before := certs.asked.Load()
	for range 5 {
		if ds, err := f.engine.List(ctx, "prj_pro"); err != nil || len(ds) != 2 || ds[0].Certificate.State != customdomain.CertIssuing {
			t.Fatalf("List = %+v, %v", ds, err)
		}
	}
	if n := certs.asked.Load() - before; n != 2 {
		t.Fatalf("5 lists of 2 domains asked the certificate layer %d times, want 2", n)
	}

	// Obtained: the layer reports it, and the next view shows it.
	notAfter := start.Add(90 * 24 * time.Hour)
	certs.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertIssued, NotAfter: notAfter})
	if err := f.engine.CertificateChanged(ctx, "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.engine.Get(ctx, "prj_pro", "shop.example.com"); d.Status != customdomain.StatusActive || !d.Certificate.NotAfter.Equal(notAfter) {
		t.Fatalf("after CertificateChanged: %s, certificate %+v", d.Status, d.Certificate)
	}

	// Renewed without a report: shown after the next Refresh.
	renewed := notAfter.Add(60 * 24 * time.Hour)
	certs.set("shop.example.com", customdomain.CertStatus{State: customdomain.CertIssued, NotAfter: renewed})
	if err := f.engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.engine.Get(ctx, "prj_pro", "shop.example.com"); !d.Certificate.NotAfter.Equal(renewed) {
		t.Fatalf("after a Refresh the certificate shows until %v, want the renewed %v", d.Certificate.NotAfter, renewed)
	}
}
