package acme_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/acme/acmetest"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// edgeTarget is the platform name customers point their CNAMEs at; the
// test DNS serves it as 127.0.0.1, where the listeners below run.
const edgeTarget = "edge.petstore.example"

// engineEnv is the whole custom-domain stack of one process, built from
// the real parts: the domain engine on memstore, asking a real DNS server
// (memzone) through dnsresolver, with an acme.Issuer as its CertIssuer
// ordering from an in-process Pebble that validates against the same DNS
// and reaches the issuer's plain-HTTP and TLS listeners on 127.0.0.1.
type engineEnv struct {
	t        *testing.T
	world    *domaintest.World // the DNS server and the domains' store, shared by restarts
	engine   *customdomain.Engine
	issuer   *acme.Issuer
	zone     *memzone.Provider
	ca       *acmetest.Pebble
	tlsAddr  string
	resolver customdomain.Resolver
	store    *memstore.Store // the domains: one database shared by restarts
	certs    *memstore.Store // certmagic's storage, in the same database
	httpPort int
	tlsPort  int
	serving  atomic.Pointer[acme.Issuer] // the issuer behind the listeners
	// dcvZone, when set, is the platform's DCV zone, written through
	// dcvProvider and read through dnsAddr.
	dcvZone     string
	dcvProvider certmagic.DNSProvider
	dnsAddr     string // the nameserver everything asks: the World's, or a resolver in front of it and Knot
	// unreachable makes the listeners refuse every connection's request,
	// challenges included: the CA cannot validate, so nothing is issued
	// while it is set.
	unreachable atomic.Bool
}

// project is the deployed Pro project every test domain belongs to.
const project = "prj_pro"

func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	return newEngineEnvDCV(t, "")
}

// newEngineEnvDCV is newEngineEnv with DCV delegation into dcvZone when
// it is not empty: a zone of the World's DNS server, written through its
// memzone provider, or, with knot, a zone of a Knot server written through
// RFC 2136, with a resolver in front of both servers that everything asks
// (Pebble included), as a CA's recursive resolver follows the customer's
// delegation CNAME to the platform's DNS.
func newEngineEnvDCV(t *testing.T, dcvZone string, knot ...bool) *engineEnv {
	t.Helper()
	zones := []string{"example.com.", "example.org.", "example.test.", "petstore.example."}
	useKnot := len(knot) > 0 && knot[0]
	if dcvZone != "" && !useKnot {
		zones = append(zones, dcvZone+".")
	}
	world := domaintest.New(t, domaintest.Options{
		Zones: zones, Store: memstore.New(),
		Projects: domaintest.NewProjects(customdomain.Project{ID: project, Plan: petstore.PlanPro, Deployed: true}),
		Config:   func(c *customdomain.EngineConfig) { c.CNAMETarget = edgeTarget },
	})
	zone, dnsAddr := world.Zone, world.DNS.Addr()
	var dcvProvider certmagic.DNSProvider = zone
	if useKnot {
		k := rfc2136test.StartKnot(t, dcvZone+".")
		dcvProvider = k.Provider()
		dnsAddr = acmetest.Resolver(t, map[string]string{dcvZone: k.Addr, "": world.DNS.Addr()})
	}
	if _, err := zone.AppendRecords(context.Background(), "petstore.example.", []libdns.Record{
		libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("127.0.0.1")},
	}); err != nil {
		t.Fatal(err)
	}
	httpLn := listen(t)
	tlsLn := listen(t)
	e := &engineEnv{
		t: t, world: world, zone: zone, tlsAddr: tlsLn.Addr().String(),
		dcvZone: dcvZone, dcvProvider: dcvProvider, dnsAddr: dnsAddr,
		resolver: dnsresolver.New(dnsAddr),
		store:    world.Store.(*memstore.Store), certs: memstore.New(),
		httpPort: httpLn.Addr().(*net.TCPAddr).Port, tlsPort: tlsLn.Addr().(*net.TCPAddr).Port,
	}
	e.ca = acmetest.Start(t, acmetest.Options{DNSServer: dnsAddr, HTTPPort: e.httpPort, TLSPort: e.tlsPort})
	e.start()

	// The listeners are wired as a server wires them, through whichever
	// issuer is current (a restart replaces it).
	quiet := log.New(io.Discard, "", 0)
	plain := &http.Server{ErrorLog: quiet, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.unreachable.Load() {
			http.Error(w, "unreachable", http.StatusServiceUnavailable)
			return
		}
		e.serving.Load().HTTPHandler(http.NotFoundHandler()).ServeHTTP(w, r)
	})}
	tlsConfig := e.issuer.TLSConfig()
	tlsConfig.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if e.unreachable.Load() {
			return nil, errors.New("unreachable")
		}
		return e.serving.Load().GetCertificate(h)
	}
	secure := &http.Server{ErrorLog: quiet, TLSConfig: tlsConfig, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host)
	})}
	go plain.Serve(httpLn)
	go secure.ServeTLS(tlsLn, "", "")
	t.Cleanup(func() { plain.Close(); secure.Close() })
	return e
}

// start builds one process's engine and issuer on the shared stores, and
// makes that issuer answer on the listeners.
func (e *engineEnv) start() {
	t := e.t
	// The issuer and the engine call each other, as in a server: the
	// issuer reports certificate changes, and asks during handshakes
	// whether a name may be served. engine is set before any name is
	// added, so neither callback can see it nil.
	var engine *customdomain.Engine
	issuer, err := acme.New(acme.Config{
		CA: e.ca.DirectoryURL(), RootCAs: e.ca.ServerRootPEM(), Email: "ops@example.com",
		Storage:  e.certs,
		Resolver: e.resolver,
		HTTPPort: e.httpPort, TLSPort: e.tlsPort, ListenHost: "127.0.0.1",
		OnChange: func(name string) {
			if err := engine.CertificateChanged(context.Background(), name); err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound {
				t.Errorf("CertificateChanged(%s): %v", name, err)
			}
		},
		// As examples/server wires it: from memory, no I/O per handshake.
		Allowed:   func(_ context.Context, name string) bool { return engine.Admits(name) },
		Renewable: func(_ context.Context, name string) bool { return engine.Renews(name) },
		Covered:   func(_ context.Context, name string) bool { return engine.CoveredByWildcard(name) },
		DCVZone:   e.dcvZone, DCVProvider: e.dcvProvider, DNSResolvers: []string{e.dnsAddr},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { issuer.Close() })
	engine = e.world.Replica(t, func(c *customdomain.EngineConfig) {
		c.Resolver, c.CertIssuer = e.resolver, issuer
		c.DCVZone = e.dcvZone
		c.Now = time.Now // the CA's certificates are on real time
	})
	if err := engine.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.engine, e.issuer = engine, issuer
	e.serving.Store(issuer)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// add attaches name to the project and creates, in its zone, the CNAME the
// engine asks for, plus any extra records.
func (e *engineEnv) add(name, zone string, extra ...libdns.Record) customdomain.Domain {
	e.t.Helper()
	ctx := context.Background()
	d, created, err := e.engine.Add(ctx, project, name)
	if err != nil || !created || d.Status != customdomain.StatusPending {
		e.t.Fatalf("Add(%s) = %s, created %v, %v; want a new pending domain", name, d.Status, created, err)
	}
	if len(d.Records) == 0 || d.Records[0].Type != "CNAME" || d.Records[0].Value != edgeTarget {
		e.t.Fatalf("Add(%s) asks for %+v, want a CNAME to %s first", name, d.Records, edgeTarget)
	}
	recs := append([]libdns.Record{libdns.CNAME{Name: d.Records[0].Name, TTL: time.Hour, Target: edgeTarget + "."}}, extra...)
	if _, err := e.zone.AppendRecords(ctx, zone, recs); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// verify clicks Verify and checks that the certificate was requested: the
// domain went from pending through verified to issuing. The issuer works
// in the background and Verify reports what it knows on return, so the
// domain may already be past issuing (a CAA block is found in
// milliseconds); what comes after is for the test to check, with await.
func (e *engineEnv) verify(name string) customdomain.Domain {
	e.t.Helper()
	d, err := e.engine.Verify(context.Background(), project, name)
	if err != nil {
		e.t.Fatal(err)
	}
	want := []customdomain.Status{customdomain.StatusPending, customdomain.StatusVerified, customdomain.StatusIssuing}
	if got := history(d); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		e.t.Fatalf("right after Verify(%s): %s, history %v (%+v), want it to have gone through %v", name, d.Status, got, d.Diagnosis.Findings, want)
	}
	return d
}

// await polls Get until the domain leaves issuing: it must get there by
// itself, through the issuer's OnChange, as nothing here runs the engine's
// background loop.
func (e *engineEnv) await(name string) customdomain.Domain {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := e.engine.Get(context.Background(), project, name)
		if err != nil {
			e.t.Fatal(err)
		}
		if d.Status != customdomain.StatusIssuing {
			return d
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s still issuing after 20 s; certificate %+v", name, d.Certificate)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// handshake connects to the TLS listener with name as SNI, verifying the
// served chain against the roots Pebble issues from.
func (e *engineEnv) handshake(name string) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", e.tlsAddr,
		&tls.Config{ServerName: name, RootCAs: e.ca.IssuedRoots()})
	if err != nil {
		return err
	}
	return conn.Close()
}

func history(d customdomain.Domain) []customdomain.Status {
	var out []customdomain.Status
	for _, h := range d.History {
		out = append(out, h.Status)
	}
	return out
}

// A verified subdomain becomes active by itself once its certificate is
// issued, and is served with a certificate chaining to the CA's root;
// removing it makes the very next handshake fail.
func TestEngineIssuesThenRemoves(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t)
	name := uniqueLabel("shop") + ".example.com"
	e.add(name, "example.com.")
	if err := e.handshake(name); err == nil {
		t.Fatal("handshake succeeded for a pending domain")
	}
	e.verify(name)
	d := e.await(name)

	want := []customdomain.Status{customdomain.StatusPending, customdomain.StatusVerified, customdomain.StatusIssuing, customdomain.StatusActive}
	if got := history(d); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v (reason %q, certificate %+v)", got, want, d.Reason, d.Certificate)
	}
	if c := d.Certificate; c.State != customdomain.CertIssued || c.Issuer == "" || !c.NotAfter.After(time.Now()) {
		t.Fatalf("certificate %+v, want issued by a named issuer, not expired", c)
	}
	if !d.Diagnosis.OK || d.Diagnosis.NextAction != customdomain.ActionNone || len(d.Diagnosis.Findings) != 0 {
		t.Fatalf("diagnosis of an active domain: %+v", d.Diagnosis)
	}
	if err := e.handshake(name); err != nil {
		t.Fatalf("handshake for the active domain, verified against Pebble's root: %v", err)
	}

	if err := e.engine.Remove(context.Background(), project, name); err != nil {
		t.Fatal(err)
	}
	if err := e.handshake(name); err == nil {
		t.Fatal("handshake succeeded right after Remove")
	}
	if _, err := e.engine.Get(context.Background(), project, name); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("Get after Remove: %v, want not_found", err)
	}
}

// A process that stops while a certificate is being obtained leaves the
// domain issuing in the database; the next process's issuer knows nothing
// about it. Its background check asks for the certificate again, and the
// domain becomes active and is served.
func TestEngineIssuesAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t)
	name := uniqueLabel("shop") + ".example.com"
	e.add(name, "example.com.")
	// The CA cannot validate until the first process has stopped, so it
	// stops before anything is issued, however the goroutines are scheduled.
	e.unreachable.Store(true)
	e.verify(name)
	e.issuer.Close() // the process stops before the CA has issued
	e.unreachable.Store(false)
	e.start() // and a new one starts on the same database
	ctx := context.Background()
	d, err := e.engine.Get(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusIssuing || d.Certificate.State != customdomain.CertNone {
		t.Fatalf("after the restart: %s, certificate %s; want issuing with no certificate known", d.Status, d.Certificate.State)
	}
	// The background check is due a minute after Verify.
	if _, err := e.engine.RunDue(ctx, time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d := e.await(name); d.Status != customdomain.StatusActive {
		t.Fatalf("after the restart and a background check: %s (%q), certificate %+v; want active", d.Status, d.Reason, d.Certificate)
	}
	if err := e.handshake(name); err != nil {
		t.Fatalf("handshake after the restart: %v", err)
	}
}

// CAA records naming another CA fail the domain with CAA_BLOCKS_CA in its
// certificate status and diagnosis, before the CA is asked for an order.
func TestEngineCAABlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, name, caaOwner string
	}{
		{"CAA at the zone apex", "shop.example.org", "@"},
		{"CAA at a parent below the apex", "shop.eu.example.org", "eu"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			e := newEngineEnv(t)
			e.add(tc.name, "example.org.", libdns.CAA{Name: tc.caaOwner, TTL: time.Hour, Tag: "issue", Value: "othe-ca.example"})
			orders := e.ca.Requests("/order-plz")
			e.verify(tc.name)
			d := e.await(tc.name)

			if d.Status != customdomain.StatusFailed || d.Reason == "" {
				t.Fatalf("status %s (reason %q), want failed with a reason", d.Status, d.Reason)
			}
			want := []customdomain.Status{customdomain.StatusPending, customdomain.StatusVerified, customdomain.StatusIssuing, customdomain.StatusFailed}
			if got := history(d); !slices.Equal(got, want) {
				t.Fatalf("history %v, want %v", got, want)
			}
			if d.Certificate.State != customdomain.CertFailed || !hasFinding(d.Certificate.Findings, customdomain.FindingCAABlocksCA) {
				t.Fatalf("certificate %+v, want failed with %s", d.Certificate, customdomain.FindingCAABlocksCA)
			}
			if !hasFinding(d.Diagnosis.Findings, customdomain.FindingCAABlocksCA) || d.Diagnosis.NextAction != customdomain.ActionFixDNS {
				t.Fatalf("diagnosis %+v, want %s and next action %s", d.Diagnosis, customdomain.FindingCAABlocksCA, customdomain.ActionFixDNS)
			}
			i := slices.IndexFunc(d.Certificate.Findings, func(f customdomain.Finding) bool { return f.Code == customdomain.FindingCAABlocksCA })
			if f := d.Certificate.Findings[i]; !strings.Contains(f.Message+f.Fix+recordsText(f.Records), "othe-ca.example") ||
				!strings.Contains(f.Fix, "pebble.letsencrypt.org") {
				t.Fatalf("finding %+v must show the blocking record and the record to add", f)
			}
			if n := e.ca.Requests("/order-plz"); n != orders {
				t.Fatalf("Pebble got %d new orders for a CAA-blocked name, want none", n-orders)
			}
			if err := e.handshake(tc.name); err == nil {
				t.Fatal("handshake succeeded for a failed domain")
			}
		})
	}
}

func hasFinding(fs []customdomain.Finding, code string) bool {
	return slices.ContainsFunc(fs, func(f customdomain.Finding) bool { return f.Code == code })
}

func recordsText(rs []customdomain.Record) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Name + " " + r.Type + " " + r.Value + "\n")
	}
	return b.String()
}

// A process whose attempt failed (CAA blocked the CA) must not go on
// reporting that failure once another process sharing the storage has
// obtained the certificate (the customer fixed CAA, and their Re-verify
// reached the other process): its views would show an active domain's
// certificate failed, with the old CAA finding, and its checks would tell
// the project domain.certificate.failed.
func TestEngineFailureOfAnotherProcessDoesNotLinger(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t)
	ctx := context.Background()
	name := uniqueLabel("shop") + ".example.org"
	caa := libdns.CAA{Name: "@", TTL: time.Hour, Tag: "issue", Value: "othe-ca.example"}
	e.add(name, "example.org.", caa)
	e.verify(name)
	if d := e.await(name); d.Status != customdomain.StatusFailed {
		t.Fatalf("CAA-blocked: %s, want failed", d.Status)
	}
	first := e.engine
	if _, err := e.zone.DeleteRecords(ctx, "example.org.", []libdns.Record{caa}); err != nil {
		t.Fatal(err)
	}
	e.start() // another process, on the same database and certificate storage
	e.verify(name)
	if d := e.await(name); d.Status != customdomain.StatusActive {
		t.Fatalf("Re-verify on the other process: %s (%q), want active", d.Status, d.Reason)
	}
	if err := first.Refresh(ctx); err != nil { // as Run does every 2 s, or the change feed at once
		t.Fatal(err)
	}
	d, err := first.Get(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != customdomain.StatusActive || d.Certificate.State != customdomain.CertIssued || !d.Diagnosis.OK {
		t.Fatalf("the first process shows %s, certificate %s (%q), diagnosis %+v; want active, issued, OK",
			d.Status, d.Certificate.State, d.Certificate.Reason, d.Diagnosis)
	}
}
