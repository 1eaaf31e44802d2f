package customdomain_test

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// dnsLink relays DNS over UDP to a server, and black-holes every query
// while paused: nameservers that stopped answering.
type dnsLink struct {
	pc     net.PacketConn
	paused atomic.Bool
}

// startDNSLink relays to server until the test ends.
func startDNSLink(t *testing.T, server string) *dnsLink {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	l := &dnsLink{pc: pc}
	go func() {
		for {
			buf := make([]byte, 65535)
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if l.paused.Load() {
				continue
			}
			go func(q []byte) {
				c, err := net.Dial("udp", server)
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(q); err != nil {
					return
				}
				a := make([]byte, 65535)
				if n, err := c.Read(a); err == nil {
					_, _ = pc.WriteTo(a[:n], from)
				}
			}(buf[:n])
		}
	}()
	return l
}

func (l *dnsLink) addr() string { return l.pc.LocalAddr().String() }

// TestRemovalReachesAReplicaWhoseDNSHangs: a replica without EdgeIPs
// learns the edge's addresses from the CNAME target's records, and its
// nameservers stop answering (a black hole). A domain another process
// removes must still stop being served there at once, through the
// change feed and through Run's periodic reload alike: routing needs no
// DNS. Before, every reload first looked the target up again, so the
// removal waited for the DNS lookups' timeouts (through the feed, longer
// than a reload may take: it never arrived).
func TestRemovalReachesAReplicaWhoseDNSHangs(t *testing.T) {
	for _, viaFeed := range []bool{true, false} {
		name := "periodic refresh"
		if viaFeed {
			name = "change feed"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			feed := &changefeed.Local{}
			w := domaintest.New(t, domaintest.Options{
				Zones: []string{"example.com.", "petstore.example."}, Projects: projects,
				Config: func(c *customdomain.EngineConfig) {
					c.EdgeIPs = nil
					c.Feed = feed
				},
			})
			w.Set(t, "petstore.example.", libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("127.0.0.1")})
			w.Set(t, "example.com.", cname("shop", domaintest.Target))
			if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			if d, err := w.Engine.Verify(ctx, "prj_pro", "shop.example.com"); err != nil || d.Status != customdomain.StatusActive {
				t.Fatalf("Verify = %s, %v; want active", d.Status, err)
			}

			link := startDNSLink(t, w.DNS.Addr())
			resolver := dnsresolver.New(link.addr())
			resolver.Timeout = time.Minute // the context's deadline, if any, comes first
			b := w.Replica(t, func(c *customdomain.EngineConfig) {
				c.Resolver = resolver
				c.RefreshEvery = 50 * time.Millisecond
				if !viaFeed {
					c.Feed = nil
				}
			})
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if r := b.Route("shop.example.com"); r.Kind != customdomain.RouteServe {
				t.Fatalf("before: %+v, want served", r)
			}

			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			if viaFeed {
				live := make(chan struct{})
				go feed.Subscribe(runCtx, func(c changefeed.Change) {
					b.Apply(c)
					if c.Kind == changefeed.KindLive {
						close(live)
					}
				})
				<-live
			} else {
				done := make(chan error, 1)
				go func() { done <- b.Run(runCtx) }()
				defer func() { cancel(); <-done }()
			}
			link.paused.Store(true)
			time.Sleep(100 * time.Millisecond) // reloads now meet the black hole

			if err := w.Engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			// "At once" is milliseconds; 3 seconds is far beyond that and
			// far below the lookups' timeouts.
			deadline := time.Now().Add(3 * time.Second)
			for b.Route("shop.example.com").Kind != customdomain.RouteNone {
				if time.Now().After(deadline) {
					t.Fatalf("the removed domain was still served by the replica whose DNS hangs 3 s after the removal: %+v", b.Route("shop.example.com"))
				}
				time.Sleep(5 * time.Millisecond)
			}
			if b.Admits("shop.example.com") {
				t.Fatal("the removed domain is still admitted")
			}
		})
	}
}
