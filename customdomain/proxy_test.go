package customdomain_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// proxiedWorld is a World whose edge listens on 127.0.0.1, with a CDN's
// reverse proxy in front of it on 127.0.0.2 (both loopback), listed as
// "Example CDN"; the engine's HTTP check connects to the proxy's port.
func proxiedWorld(t *testing.T) *domaintest.World {
	t.Helper()
	proxyLn, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	port := proxyLn.Addr().(*net.TCPAddr).Port
	w := domaintest.New(t, domaintest.Options{
		Projects: projects,
		Config: func(c *customdomain.EngineConfig) {
			c.EdgeIPs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			c.CDNs = []customdomain.CDN{{Name: "Example CDN", Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}}
			c.ProbePort, c.ProbePrivate = port, true
		},
	})
	front, err := edge.New(edge.Config{
		PlatformHosts: []string{"platform.example"},
		Platform:      http.NotFoundHandler(),
		Router:        w.Engine,
		Challenges:    w.Engine,
		Site:          func(string) http.Handler { return http.NotFoundHandler() },
	})
	if err != nil {
		t.Fatal(err)
	}
	edgeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	edgeSrv := &http.Server{Handler: front}
	go edgeSrv.Serve(edgeLn)
	origin, _ := url.Parse("http://" + edgeLn.Addr().String())
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(origin)
		pr.Out.Host = pr.In.Host // a CDN keeps the Host
	}}
	proxySrv := &http.Server{Handler: proxy}
	go proxySrv.Serve(proxyLn)
	t.Cleanup(func() { edgeSrv.Close(); proxySrv.Close() })
	return w
}

// TestProxiedRecordVerifiesByTXTAndHTTP: a record behind a CDN's proxy
// resolves to the CDN's addresses, so its CNAME cannot be seen. The
// diagnosis names the case (PROXIED, and the CDN); with the ownership TXT
// record published, Verify fetches the challenge path over the customer's
// host name through the proxy, gets the token back from this platform,
// and the domain verifies.
func TestProxiedRecordVerifiesByTXTAndHTTP(t *testing.T) {
	ctx := context.Background()
	w := proxiedWorld(t)
	const name = "shop.example.com"
	w.Set(t, "example.com.", addr("shop", "127.0.0.2"))
	d, _, err := w.Engine.Add(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := ownershipRecord(d)
	d, err = w.Engine.Verify(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	f := d.Diagnosis.Findings
	if d.Status != customdomain.StatusPending || len(f) != 1 || f[0].Code != customdomain.FindingProxied ||
		!strings.Contains(f[0].Message, "Example CDN") || !strings.Contains(f[0].Fix, rec.Value) || d.Diagnosis.NextAction != customdomain.ActionFixDNS {
		t.Fatalf("a proxied record without the TXT record: %s %+v", d.Status, d.Diagnosis)
	}

	w.Set(t, "example.com.", libdns.TXT{Name: "_petstore-challenge.shop", Text: rec.Value})
	d, err = w.Engine.Verify(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusActive || !d.Diagnosis.OK {
		t.Fatalf("with the TXT record, through the proxy: %s %+v, want active", d.Status, d.Diagnosis)
	}
}

// TestProxiedCheckNeedsThisPlatform: the TXT record alone is not enough:
// when the addresses do not lead to this platform (nothing answers, or not
// with the token), the domain does not verify and the diagnosis says the
// HTTP check failed; addresses of no known CDN are called not the edge's.
func TestProxiedCheckNeedsThisPlatform(t *testing.T) {
	ctx := context.Background()
	w := proxiedWorld(t)
	const name = "shop.example.com"
	w.Set(t, "example.com.", addr("shop", "127.0.0.3")) // nobody listens there
	d, _, err := w.Engine.Add(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	d, err = w.Engine.Verify(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Diagnosis.Findings; len(f) != 1 || f[0].Code != customdomain.FindingConflictingRecord || !strings.Contains(f[0].Message, "not this platform's edge") {
		t.Fatalf("addresses of no CDN: %+v", f)
	}
	rec, _ := ownershipRecord(d)
	w.Set(t, "example.com.", libdns.TXT{Name: "_petstore-challenge.shop", Text: rec.Value})
	d, err = w.Engine.Verify(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Diagnosis.Findings; d.Status != customdomain.StatusPending || len(f) != 1 || !strings.Contains(f[0].Message, "the HTTP check through 127.0.0.3 failed") {
		t.Fatalf("TXT right, HTTP check unanswered: %s %+v", d.Status, f)
	}
}

// TestProbeRefusesPrivateAddresses: without ProbePrivate the HTTP check
// never connects to a loopback or private address, whatever the
// customer's record says.
func TestProbeRefusesPrivateAddresses(t *testing.T) {
	// Private, shared (CGNAT) and NAT64-embedded private addresses: none
	// is the internet's, so none is fetched from.
	for _, a := range []string{"10.1.2.3", "100.64.0.1", "64:ff9b::a01:203"} {
		t.Run(a, func(t *testing.T) {
			ctx := context.Background()
			w := domaintest.New(t, domaintest.Options{Projects: projects})
			w.Set(t, "example.com.", addr("shop", a))
			d, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com")
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := ownershipRecord(d)
			w.Set(t, "example.com.", libdns.TXT{Name: "_petstore-challenge.shop", Text: rec.Value})
			d, err = w.Engine.Verify(ctx, "prj_pro", "shop.example.com")
			if err != nil {
				t.Fatal(err)
			}
			if f := d.Diagnosis.Findings; d.Status != customdomain.StatusPending || len(f) != 1 || !strings.Contains(f[0].Message, a+" is not a public address") {
				t.Fatalf("a non-public address: %s %+v", d.Status, f)
			}
		})
	}
}

func TestDefaultCDNs(t *testing.T) {
	cdns := customdomain.DefaultCDNs()
	names := map[string]bool{}
	for _, c := range cdns {
		names[c.Name] = len(c.Prefixes) > 0
	}
	if !names["Cloudflare"] || !names["Fastly"] || !names["Amazon CloudFront"] {
		t.Fatalf("DefaultCDNs = %v, want Cloudflare, Fastly and Amazon CloudFront with ranges", names)
	}
	if _, err := customdomain.ParseCDNs(strings.NewReader("Example 10.0.0.0/8\nbroken\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ParseCDNs of a broken line: %v, want an error naming line 2", err)
	}
}

// TestCloudflareAddressIsProxied: with the embedded list, an address of
// Cloudflare's proxy is named as such, with both ways out.
func TestCloudflareAddressIsProxied(t *testing.T) {
	ctx := context.Background()
	w := domaintest.New(t, domaintest.Options{Projects: projects})
	w.Set(t, "example.com.", addr("shop", "104.16.1.1"))
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Diagnosis.Findings; len(f) != 1 || f[0].Code != customdomain.FindingProxied ||
		!strings.Contains(f[0].Message, "addresses of Cloudflare") || !strings.Contains(f[0].Fix, "DNS only") || !strings.Contains(f[0].Fix, "_petstore-challenge.shop") {
		t.Fatalf("a Cloudflare address: %+v", f)
	}
}

// TestProxiedDomainKeepsServingWithoutItsTXTRecord: a proxied domain
// verified by the ownership TXT record and the HTTP check through the
// proxy, whose customer then deletes the TXT record, as the dashboard's
// note says they may once the domain is active. The hourly drift check
// still finds that the name reaches this platform through the proxy: the
// domain stays active. Before, every drift check asked for the TXT record
// again, so the domain went misconfigured and was released 72 hours
// later, while its record had not moved.
func TestProxiedDomainKeepsServingWithoutItsTXTRecord(t *testing.T) {
	ctx := context.Background()
	w := proxiedWorld(t)
	const name = "shop.example.com"
	w.Set(t, "example.com.", addr("shop", "127.0.0.2"))
	d, _, err := w.Engine.Add(ctx, "prj_pro", name)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := ownershipRecord(d)
	w.Set(t, "example.com.", libdns.TXT{Name: "_petstore-challenge.shop", Text: rec.Value})
	if d, err := w.Engine.Verify(ctx, "prj_pro", name); err != nil || d.Status != customdomain.StatusActive {
		t.Fatalf("Verify through the proxy = %s, %v; want active", d.Status, err)
	}

	if _, err := w.Zone.DeleteRecords(ctx, "example.com.", []libdns.Record{libdns.RR{Name: "_petstore-challenge.shop", Type: "TXT"}}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, w, w.Clock.Now().Add(2*time.Hour))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusActive || len(d.Diagnosis.Findings) != 0 {
		t.Fatalf("after the TXT record was deleted: %s (%q) %s; want active, still reached through the proxy", d.Status, d.Reason, codes(d.Diagnosis.Findings))
	}

	// The proxy no longer leads here: that is drift.
	w.Set(t, "example.com.", addr("shop", "127.0.0.3"))
	runUntil(t, w, w.Clock.Now().Add(2*time.Hour))
	if d := get(t, w, "prj_pro", name); d.Status != customdomain.StatusMisconfigured {
		t.Fatalf("once the name no longer reaches this platform: %s, want misconfigured", d.Status)
	}
}
