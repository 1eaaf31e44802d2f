package acme_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/customdomain"
)

// dcvZone is the platform's own zone where DNS-01 records are written.
const dcvZone = "acme.petstore.example"

// dcvRecord returns the delegation CNAME among d's instructions.
func dcvRecord(t *testing.T, d customdomain.Domain) customdomain.Record {
	t.Helper()
	for _, r := range d.Records {
		if r.Type == "CNAME" && strings.HasPrefix(r.Name, "_acme-challenge") {
			if !strings.HasSuffix(r.Value, "."+dcvZone) {
				t.Fatalf("delegation %+v does not point into %s", r, dcvZone)
			}
			return r
		}
	}
	t.Fatalf("no _acme-challenge CNAME among %+v", d.Records)
	return customdomain.Record{}
}

// awaitCert polls until the issuer has name's certificate.
func (e *engineEnv) awaitCert(name string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := e.issuer.Status(context.Background(), name)
		if err == nil && st.State == customdomain.CertIssued {
			return
		}
		if err == nil && st.State == customdomain.CertFailed {
			e.t.Fatalf("certificate for %s failed: %s", name, st.Reason)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no certificate for %s after 30 s: %+v, %v", name, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCertificateBeforeCutover: with the _acme-challenge CNAME the
// dashboard shows delegated into the platform's DCV zone, Verify obtains
// the certificate by DNS-01 (Pebble validating against the real DNS
// server) while the domain's routing CNAME still points at another host:
// the TLS listener then answers its handshake, and once the CNAME moves
// here the domain is active at once, with no window without HTTPS.
func TestCertificateBeforeCutover(t *testing.T) {
	ctx := context.Background()
	e := newEngineEnvDCV(t, dcvZone)
	label := uniqueLabel("www")
	name := label + ".example.test"
	d, _, err := e.engine.Add(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	dcv := dcvRecord(t, d)
	if !dcv.Optional || dcv.Name != "_acme-challenge."+label {
		t.Fatalf("delegation instruction %+v, want optional, at _acme-challenge.%s", dcv, label)
	}
	if _, err := e.zone.AppendRecords(ctx, "example.test.", []libdns.Record{
		libdns.CNAME{Name: label, TTL: time.Hour, Target: "old-host.example.org."},
		libdns.CNAME{Name: dcv.Name, TTL: time.Hour, Target: dcv.Value + "."},
	}); err != nil {
		t.Fatal(err)
	}
	if d, err = e.engine.Verify(ctx, project, name); err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("Verify with the CNAME elsewhere = %s, %v; want still pending", d.Status, err)
	}
	e.awaitCert(name)
	deadline := time.Now().Add(10 * time.Second)
	for d.Certificate.State != customdomain.CertIssued && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the issuer's OnChange reaches the engine
		if d, err = e.engine.Get(ctx, project, name); err != nil {
			t.Fatal(err)
		}
	}
	if d.Status != customdomain.StatusPending || d.Certificate.State != customdomain.CertIssued {
		t.Fatalf("the dashboard shows %s with certificate %+v, want pending with the certificate issued", d.Status, d.Certificate)
	}
	if err := e.handshake(name); err != nil {
		t.Fatalf("handshake for %s with its certificate obtained before the cutover: %v", name, err)
	}
	if r := e.engine.Route(name); r.Kind != customdomain.RouteNone {
		t.Fatalf("a pending domain is routed: %+v", r)
	}

	// The cutover: the routing record moves here, and the certificate is
	// already there.
	if _, err := e.zone.SetRecords(ctx, "example.test.", []libdns.Record{
		libdns.CNAME{Name: label, TTL: time.Hour, Target: edgeTarget + "."},
	}); err != nil {
		t.Fatal(err)
	}
	d, err = e.engine.Verify(ctx, project, name)
	if err != nil || d.Status != customdomain.StatusActive || d.Certificate.State != customdomain.CertIssued {
		t.Fatalf("Verify after the cutover = %s (certificate %+v), %v; want active at once", d.Status, d.Certificate, err)
	}
}

// TestWildcardCertificate: a wildcard verifies with its routing CNAME and
// its DCV delegation, gets one certificate by DNS-01, and that
// certificate answers the handshake of every name one label below it,
// which the engine routes to the wildcard's project.
func TestWildcardCertificate(t *testing.T) {
	ctx := context.Background()
	e := newEngineEnvDCV(t, dcvZone)
	label := uniqueLabel("shop")
	name := "*." + label + ".example.test"
	d, _, err := e.engine.Add(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != customdomain.KindWildcard || d.Records[0].Name != "*."+label {
		t.Fatalf("wildcard added as %+v", d)
	}
	dcv := dcvRecord(t, d)
	if dcv.Optional || dcv.Name != "_acme-challenge."+label {
		t.Fatalf("a wildcard's delegation %+v, want required, at _acme-challenge.%s", dcv, label)
	}
	if _, err := e.zone.AppendRecords(ctx, "example.test.", []libdns.Record{
		libdns.CNAME{Name: "*." + label, TTL: time.Hour, Target: edgeTarget + "."},
	}); err != nil {
		t.Fatal(err)
	}
	d, err = e.engine.Verify(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Diagnosis.Findings; d.Status != customdomain.StatusPending || len(f) != 1 || f[0].Code != customdomain.FindingDCVMissing {
		t.Fatalf("a wildcard without its delegation: %s %+v, want pending with DCV_MISSING", d.Status, f)
	}
	if _, err := e.zone.AppendRecords(ctx, "example.test.", []libdns.Record{
		libdns.CNAME{Name: dcv.Name, TTL: time.Hour, Target: dcv.Value + "."},
	}); err != nil {
		t.Fatal(err)
	}
	e.verify(name)
	if d := e.await(name); d.Status != customdomain.StatusActive {
		t.Fatalf("wildcard after issuing: %s %+v", d.Status, d.Certificate)
	}
	for _, host := range []string{"a." + label + ".example.test", "b." + label + ".example.test"} {
		if err := e.handshake(host); err != nil {
			t.Errorf("handshake for %s under the wildcard: %v", host, err)
		}
		if r := e.engine.Route(host); r.Kind != customdomain.RouteServe || r.ProjectID != project || r.Name != host {
			t.Errorf("Route(%s) = %+v, want served for %s", host, r, project)
		}
	}
	if r := e.engine.Route("x.a." + label + ".example.test"); r.Kind != customdomain.RouteNone {
		t.Errorf("a name two labels below the wildcard is routed: %+v", r)
	}

	// Another process (here: a restart) on the same storage answers the
	// names below with the stored wildcard certificate (certmagic's
	// handshake looks for the wildcard in storage), ordering nothing.
	orders := e.ca.Requests("/finalize-order/")
	e.start()
	if err := e.handshake("c." + label + ".example.test"); err != nil {
		t.Fatalf("handshake under the wildcard after a restart: %v", err)
	}
	if n := e.ca.Requests("/finalize-order/"); n != orders {
		t.Fatalf("%d certificates ordered for a name under a stored wildcard, want none", n-orders)
	}
}

// TestCertificateBeforeCutoverWithKnot: the same, with the platform's DCV
// zone on a real Knot server that the issuer writes through RFC 2136 (as
// -dns-provider rfc2136:// does), and the customer's zone on another
// server: the CA's resolver follows the delegation from one to the other.
// A wildcard gets its certificate the same way.
func TestCertificateBeforeCutoverWithKnot(t *testing.T) {
	ctx := context.Background()
	e := newEngineEnvDCV(t, dcvZone, true)
	label := uniqueLabel("knot")
	name := label + ".example.test"
	wild := "*." + uniqueLabel("kshop") + ".example.test"
	var recs []libdns.Record
	for _, n := range []string{name, wild} {
		d, _, err := e.engine.Add(ctx, project, n)
		if err != nil {
			t.Fatal(err)
		}
		dcv := dcvRecord(t, d)
		recs = append(recs, libdns.CNAME{Name: dcv.Name, TTL: time.Hour, Target: dcv.Value + "."})
	}
	recs = append(recs,
		libdns.CNAME{Name: label, TTL: time.Hour, Target: "old-host.example.org."},
		libdns.CNAME{Name: strings.TrimSuffix(wild, ".example.test"), TTL: time.Hour, Target: edgeTarget + "."})
	if _, err := e.zone.AppendRecords(ctx, "example.test.", recs); err != nil {
		t.Fatal(err)
	}
	if d, err := e.engine.Verify(ctx, project, name); err != nil || d.Status != customdomain.StatusPending {
		t.Fatalf("Verify with the CNAME elsewhere = %s, %v; want still pending", d.Status, err)
	}
	e.verify(wild)
	e.awaitCert(name)
	if d := e.await(wild); d.Status != customdomain.StatusActive {
		t.Fatalf("wildcard: %s %+v", d.Status, d.Certificate)
	}
	for _, host := range []string{"a" + strings.TrimPrefix(wild, "*"), "b" + strings.TrimPrefix(wild, "*")} {
		if err := e.handshake(host); err != nil {
			t.Errorf("handshake for %s: %v", host, err)
		}
	}
}

// failingDNS is a DCV zone provider whose writes fail: a wildcard's
// DNS-01 order cannot complete, so the wildcard stays issuing.
type failingDNS struct{}

func (failingDNS) AppendRecords(context.Context, string, []libdns.Record) ([]libdns.Record, error) {
	return nil, errors.New("provider down")
}

func (failingDNS) DeleteRecords(context.Context, string, []libdns.Record) ([]libdns.Record, error) {
	return nil, errors.New("provider down")
}

// TestNoCertificatePerNameBelowAWildcard: a name below a wildcard that
// has no certificate yet gets none of its own at a handshake; the
// wildcard's answers it once obtained. Else each made-up label anyone
// sends would cost an order at the CA.
func TestNoCertificatePerNameBelowAWildcard(t *testing.T) {
	ctx := context.Background()
	e := newEngineEnvDCV(t, dcvZone)
	e.dcvProvider = failingDNS{}
	e.start() // a process whose DCV writes fail
	label := uniqueLabel("wshop")
	name := "*." + label + ".example.test"
	d, _, err := e.engine.Add(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	dcv := dcvRecord(t, d)
	if _, err := e.zone.AppendRecords(ctx, "example.test.", []libdns.Record{
		libdns.CNAME{Name: "*." + label, TTL: time.Hour, Target: edgeTarget + "."},
		libdns.CNAME{Name: dcv.Name, TTL: time.Hour, Target: dcv.Value + "."},
	}); err != nil {
		t.Fatal(err)
	}
	if d := e.verify(name); d.Status != customdomain.StatusIssuing {
		t.Fatalf("wildcard %s, want issuing (its DNS-01 cannot complete)", d.Status)
	}
	orders := e.ca.Requests("/finalize-order/")
	for _, l := range []string{"rnd1", "rnd2", "rnd3"} {
		// What the wildcard CNAME answers for each (the test DNS server
		// does not synthesise wildcard answers).
		if _, err := e.zone.AppendRecords(ctx, "example.test.", []libdns.Record{
			libdns.CNAME{Name: l + "." + label, TTL: time.Hour, Target: edgeTarget + "."},
		}); err != nil {
			t.Fatal(err)
		}
		host := l + "." + label + ".example.test"
		for range 3 {
			if err := e.handshake(host); err == nil {
				t.Fatalf("handshake for %s answered before the wildcard has a certificate", host)
			}
		}
	}
	if n := e.ca.Requests("/finalize-order/") - orders; n != 0 {
		t.Fatalf("handshakes for made-up names below the wildcard finalized %d orders, want none", n)
	}
}
