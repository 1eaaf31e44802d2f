package acme_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/acme/acmetest"
	"github.com/petstorekit/petstore/customdomain"
)

func status(t *testing.T, is *acme.Issuer, name string) customdomain.CertStatus {
	t.Helper()
	st, err := is.Status(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A verified name gets a certificate chaining to the CA's root, over
// HTTP-01/TLS-ALPN-01 for a subdomain and DNS-01 for an apex.
func TestIssue(t *testing.T) {
	for _, tc := range []struct {
		desc, label string // label under example.com, "@" for the apex
		dns01       bool
	}{
		{"subdomain over HTTP-01 or TLS-ALPN-01", "shop", false},
		{"apex over DNS-01", "@", true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 0)
			name, label := "example.com", tc.label
			if label != "@" {
				label = uniqueLabel(label)
				name = label + ".example.com"
			}
			e.point(label)
			is := e.issuer(func(c *acme.Config) {
				if tc.dns01 {
					c.DNSProvider = e.zone
					c.DNSResolvers = []string{e.dns.Addr()}
				}
			})
			// Not verified yet: the on-demand fallback must not issue.
			e.deny(name, true)
			if _, err := e.handshake(name); err == nil {
				t.Fatal("handshake succeeded for a name the engine does not allow")
			}
			e.deny(name, false)
			if err := is.Request(context.Background(), name); err != nil {
				t.Fatal(err)
			}
			if st := status(t, is, name); st.State != customdomain.CertIssuing && st.State != customdomain.CertIssued {
				t.Fatalf("status right after Request = %+v, want issuing", st)
			}
			e.waitChange(name)
			st := status(t, is, name)
			if st.State != customdomain.CertIssued || st.NotAfter.Before(time.Now()) || st.Issuer == "" {
				t.Fatalf("status = %+v, want issued with a future notAfter and an issuer", st)
			}
			leaf, err := e.handshake(name)
			if err != nil {
				t.Fatalf("handshake verified against the CA's root: %v", err)
			}
			if leaf.VerifyHostname(name) != nil || !leaf.NotAfter.Equal(st.NotAfter) {
				t.Fatalf("served certificate for %v until %v; status says until %v", leaf.DNSNames, leaf.NotAfter, st.NotAfter)
			}
		})
	}
}

// CAA naming another CA blocks with a finding, and the CA is never asked.
func TestCAABlocksWithoutAskingTheCA(t *testing.T) {
	for _, tc := range []struct {
		desc       string
		configured bool // CA identities configured, so not even the directory is read
	}{
		{"identities from the directory", false},
		{"identities configured", true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 0)
			label := uniqueLabel("shop")
			name := label + ".example.com"
			e.point(label)
			if _, err := e.zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
				libdns.CAA{Name: "@", TTL: time.Minute, Tag: "issue", Value: "digicert.com"},
			}); err != nil {
				t.Fatal(err)
			}
			is := e.issuer(func(c *acme.Config) {
				if tc.configured {
					c.CAAIdentities = []string{"pebble.letsencrypt.org"}
				}
			})
			if err := is.Request(context.Background(), name); err != nil {
				t.Fatal(err)
			}
			e.waitChange(name)
			st := status(t, is, name)
			if st.State != customdomain.CertFailed || len(st.Findings) != 1 || st.Findings[0].Code != "CAA_BLOCKS_CA" {
				t.Fatalf("status = %+v, want failed with CAA_BLOCKS_CA", st)
			}
			f := st.Findings[0]
			if len(f.Records) != 1 || f.Records[0].Name != "example.com" || !strings.Contains(f.Records[0].Value, "digicert.com") ||
				!strings.Contains(f.Fix, `example.com CAA 0 issue "pebble.letsencrypt.org"`) {
				t.Fatalf("finding = %+v, want the record found and the record to add", f)
			}
			for _, path := range []string{"/sign-me-up", "/order-plz", "/nonce-plz"} {
				if n := e.ca.Requests(path); n != 0 {
					t.Fatalf("%d requests to %s: the CA was asked", n, path)
				}
			}
			if n := e.ca.Requests("/"); tc.configured && n != 0 {
				t.Fatalf("%d requests to the CA, want none", n)
			}
		})
	}
}

// Removal stops serving at once and deletes from storage; two issuers on
// one store obtain one certificate; a process that was told nothing stops
// serving a removed name once the engine denies it.
func TestSharedStoreRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, 0)
	label := uniqueLabel("shop")
	name := label + ".example.com"
	e.point(label)
	a := e.issuer(nil)
	b := e.issuer(nil)
	var wg sync.WaitGroup
	for _, is := range []*acme.Issuer{a, b} {
		wg.Go(func() {
			if err := is.Request(ctx, name); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	e.waitChange(name)
	e.waitChange(name)
	if n := e.ca.Requests("/finalize-order/"); n != 1 {
		t.Fatalf("%d certificates ordered for one name by two issuers sharing a store, want 1", n)
	}
	sa, sb := status(t, a, name), status(t, b, name)
	if sa.State != customdomain.CertIssued || sb.State != customdomain.CertIssued || !sa.NotAfter.Equal(sb.NotAfter) {
		t.Fatalf("statuses %+v and %+v, want the same issued certificate", sa, sb)
	}
	if _, err := e.handshake(name); err != nil {
		t.Fatal(err)
	}

	if err := a.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := e.store.ListBlobs(ctx, "certificates/"); len(blobs) != 0 {
		t.Fatalf("after Remove, storage still holds %v", blobs)
	}
	// a serves the listeners and lost the certificate from its cache, even
	// though on-demand issuance would still allow the name.
	e.deny(name, true)
	if _, err := e.handshake(name); err == nil {
		t.Fatal("handshake succeeded right after Remove")
	}
	if st := status(t, a, name); st.State != customdomain.CertNone {
		t.Fatalf("status after Remove = %+v, want none", st)
	}
	e.mux.mu.Lock()
	e.mux.is = b // b still has it cached; the engine now denies the name
	e.mux.mu.Unlock()
	if _, err := e.handshake(name); err == nil {
		t.Fatal("another process served a removed name")
	}
}

// A removed name stays removed in shared storage: another process that
// still caches its short-lived certificate reaches the renewal time, finds
// the storage empty and would order it again; the engine no longer allows
// the name, so it evicts it instead and orders nothing.
func TestSharedStoreRemoveNotRenewedElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		label     string // of the domain, under example.com
		requested bool   // b requested the name too, rather than loading it from storage
	}{
		{"b loaded it from storage", "gone", false},
		{"b requested it too", "left", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// Not a name other tests, or other runs of this one, use:
			// certmagic keeps renewal backoff per name in global state,
			// and this renewal is refused.
			label := uniqueLabel(tc.label)
			name := label + ".example.com"
			e := newEnv(t, 10*time.Second)
			e.point(label)
			short := func(c *acme.Config) {
				c.RenewCheckInterval = 250 * time.Millisecond
				c.RenewalWindowRatio = 0.9 // renew 1 s into a 10 s lifetime
			}
			// a obtains and removes, and renews nothing: certmagic keeps
			// renewal backoff per name process-wide, so a renewal of a's
			// failing on the removal would hold b's back for a minute.
			a := e.issuer(nil)
			// b refuses to order the removed name's certificate again or,
			// when a renewal of b's was at the CA as it was removed, to
			// store what it got; or a renewal of b's that was waiting for
			// the storage lock (held by b's Request renewing at once, the
			// certificate being due) finds the files gone and fails
			// (certmagic's "job failed"), before it could order.
			refused := newLogWait("not obtaining a certificate for a name that is no longer a custom domain",
				"not storing the certificate obtained for a name that is no longer a custom domain", "job failed")
			refused.after = make(chan struct{}) // closed at the removal
			b := e.issuer(func(c *acme.Config) {
				short(c)
				c.Logger = slog.New(refused)
			})
			if err := a.Request(ctx, name); err != nil {
				t.Fatal(err)
			}
			e.waitChange(name)
			if tc.requested {
				if err := b.Request(ctx, name); err != nil {
					t.Fatal(err)
				}
				e.waitChange(name)
			}
			if st := status(t, b, name); st.State != customdomain.CertIssued {
				t.Fatalf("b's status = %+v, want issued from the shared storage", st)
			}
			orders := e.ca.Requests("/finalize-order/")
			e.deny(name, true) // the engine removed it
			close(refused.after)
			if err := a.Remove(ctx, name); err != nil {
				t.Fatal(err)
			}
			// b's maintenance reaches the renewal time (1 s into the
			// lifetime, on the real clock), finds the storage empty and
			// asks the engine, which refuses: b says so and evicts it. A
			// renewal under way at the removal is refused its storing.
			refused.wait(t)
			if blobs, _ := e.store.ListBlobs(ctx, "certificates/"); len(blobs) != 0 {
				var keys []string
				for _, bl := range blobs {
					keys = append(keys, bl.Key)
				}
				t.Fatalf("the removed certificate is back in storage: %v", keys)
			}
			if n := e.ca.Requests("/finalize-order/"); n != orders {
				t.Fatalf("%d certificates ordered after the removal, want none", n-orders)
			}
		})
	}
}

// A name removed while another process sharing the storage renews its
// certificate stays removed: the renewal, a Request's "renew now" whose
// order was at the CA when the removal came, finishes after it and does
// not write the certificate back, and that process stops caching it.
func TestRemovalDuringRenewalElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		held bool // Config.Held decides, rather than Config.Allowed
	}{{"Allowed decides", false}, {"Held decides", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, 0)
			label := uniqueLabel("renewing")
			name := label + ".example.com"
			e.point(label)
			a := e.issuer(nil)
			if err := a.Request(ctx, name); err != nil {
				t.Fatal(err)
			}
			e.waitChange(name)
			ended := newLogWait("releasing lock") // certmagic's, as b's renewal ends either way
			b := e.issuer(func(c *acme.Config) {
				// 80 of the certificate's 90 days later: due, so Request renews.
				c.Now = func() time.Time { return time.Now().Add(80 * 24 * time.Hour) }
				c.Logger = slog.New(ended)
				if tc.held {
					c.Held = c.Allowed
				}
			})
			finalizing, release := e.ca.Hold(t, "/finalize-order/")
			if err := b.Request(ctx, name); err != nil {
				t.Fatal(err)
			}
			select {
			case <-finalizing: // b's renewal is at the CA
			case <-time.After(30 * time.Second):
				t.Fatal("b's renewal never reached the CA")
			}
			e.deny(name, true) // the engine removed it
			if err := a.Remove(ctx, name); err != nil {
				t.Fatal(err)
			}
			release()
			ended.wait(t)
			if blobs, _ := e.store.ListBlobs(ctx, "certificates/"); len(blobs) != 0 {
				t.Fatalf("b's renewal, finished after the removal, wrote the removed name's certificate back: %d files", len(blobs))
			}
			if st := status(t, b, name); st.State != customdomain.CertNone {
				t.Fatalf("b's status after the removal = %+v, want none", st)
			}
		})
	}
}

// A certificate that is still pending 30 minutes after Request gets the
// finding with the spec's three steps; a new Request starts over.
func TestPendingTooLong(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	// No address for the name: validation fails and certmagic retries.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	is := e.issuer(func(c *acme.Config) { c.Now = clock })
	ctx := context.Background()
	if err := is.Request(ctx, "nowhere.example.com"); err != nil {
		t.Fatal(err)
	}
	advance(29 * time.Minute)
	if st := status(t, is, "nowhere.example.com"); st.State != customdomain.CertIssuing || len(st.Findings) != 0 {
		t.Fatalf("after 29 minutes: %+v, want issuing without findings", st)
	}
	advance(time.Minute)
	st := status(t, is, "nowhere.example.com")
	if st.State != customdomain.CertIssuing || len(st.Findings) != 1 || st.Findings[0].Code != "CERT_PENDING_TOO_LONG" {
		t.Fatalf("after 30 minutes: %+v, want CERT_PENDING_TOO_LONG", st)
	}
	for _, step := range []string{"still verifies", "CAA", "Re-verify"} {
		if !strings.Contains(st.Findings[0].Fix, step) {
			t.Fatalf("fix %q does not mention %q", st.Findings[0].Fix, step)
		}
	}
	if err := is.Request(ctx, "nowhere.example.com"); err != nil {
		t.Fatal(err)
	}
	if st := status(t, is, "nowhere.example.com"); len(st.Findings) != 0 {
		t.Fatalf("after a new Request: %+v, want a fresh attempt without findings", st)
	}
}

// Certificates are renewed before they expire, with no call from the
// engine: Pebble issues 20-second certificates here.
func TestRenewal(t *testing.T) {
	t.Parallel()
	label := uniqueLabel("renew")
	name := label + ".example.com"
	e := newEnv(t, 20*time.Second)
	e.point(label)
	is := e.issuer(func(c *acme.Config) {
		c.RenewCheckInterval = 500 * time.Millisecond
		c.RenewalWindowRatio = 0.85 // renew 3 s into a 20 s lifetime
		if testing.Verbose() {
			c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	})
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	first, err := e.handshake(name)
	if err != nil {
		t.Fatal(err)
	}
	// certmagic renews 3 s into the lifetime, or earlier: Pebble's renewal
	// information (ARI) suggests the whole lifetime as the window, and
	// certmagic picks a random second in it, possibly the first. So the
	// renewal may have been served already at the first handshake (its
	// change is then still queued), and a renewed certificate may expire
	// in the same second as the one it replaces (X.509 times are whole
	// seconds). What renewal means: a different certificate, not older,
	// obtained while the one before was still valid, is served.
	for {
		e.waitChange(name)
		second, err := e.handshake(name)
		if err != nil {
			t.Fatal(err)
		}
		if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
			continue // the change was the one the first handshake already saw
		}
		if second.NotBefore.Before(first.NotBefore) || second.NotAfter.Before(first.NotAfter) || second.NotBefore.After(first.NotAfter) {
			t.Fatalf("after renewal the served certificate is serial %v valid %v to %v; before: %v valid %v to %v",
				second.SerialNumber, second.NotBefore, second.NotAfter, first.SerialNumber, first.NotBefore, first.NotAfter)
		}
		return
	}
}

// TestCAAUndecidedWithoutIdentities: with a CA whose directory names no
// CAA identities (and none configured), a CAA record naming some CA cannot
// be checked. The certificate is still requested (the CA checks CAA
// itself), and the status lists the records found and the CAs they allow,
// saying the check could not be decided.
func TestCAAUndecidedWithoutIdentities(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, acmetest.Options{NoCAAIdentities: true})
	label := uniqueLabel("shop")
	name := label + ".example.com"
	e.point(label)
	if _, err := e.zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.CAA{Name: "@", TTL: time.Minute, Tag: "issue", Value: "digicert.com"},
	}); err != nil {
		t.Fatal(err)
	}
	is := e.issuer(nil)
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	st := status(t, is, name)
	if st.State != customdomain.CertIssued {
		t.Fatalf("status = %+v, want issued: an undecided CAA check does not block", st)
	}
	i := slices.IndexFunc(st.Findings, func(f customdomain.Finding) bool { return f.Code == customdomain.FindingCAAUndecided })
	if i < 0 {
		t.Fatalf("findings %+v, want %s", st.Findings, customdomain.FindingCAAUndecided)
	}
	f := st.Findings[i]
	if !strings.Contains(f.Message, "digicert.com") || !strings.Contains(f.Message, "could not be decided") ||
		len(f.Records) != 1 || f.Records[0].Name != "example.com" {
		t.Fatalf("finding = %+v, want the record found, the CA it allows, and that it could not be decided", f)
	}
}

// TestNotRenewedWhileMisconfigured: a name Allowed admits but Renewable
// refuses (a custom domain whose record moved away, within its grace
// period) keeps being served from the cache, and its certificate is not
// renewed: no order reaches the CA when certmagic finds it due.
func TestNotRenewedWhileMisconfigured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	label := uniqueLabel("drift")
	name := label + ".example.com"
	e := newEnv(t, 10*time.Second)
	e.point(label)
	refused := newLogWait("not renewing the certificate of a domain whose record points elsewhere")
	is := e.issuer(func(c *acme.Config) {
		c.RenewCheckInterval = 250 * time.Millisecond
		c.RenewalWindowRatio = 0.9 // renew 1 s into a 10 s lifetime
		c.Renewable = func(context.Context, string) bool { return false }
		c.Logger = slog.New(refused)
	})
	if err := is.Request(ctx, name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	first, err := e.handshake(name)
	if err != nil {
		t.Fatal(err)
	}
	orders := e.ca.Requests("/finalize-order/")
	refused.wait(t)
	again, err := e.handshake(name)
	if err != nil {
		t.Fatalf("the certificate is no longer served after the refused renewal: %v", err)
	}
	if again.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("the certificate was replaced although its renewal was refused")
	}
	if n := e.ca.Requests("/finalize-order/"); n != orders {
		t.Fatalf("%d certificates ordered after the refusal, want none", n-orders)
	}
}

// TestExpiredCertificateIsNotReportedIssued: a certificate that was not
// renewed in time (renewals kept failing) and has expired is what
// browsers refuse: Status must not report it issued, as if all were well.
func TestExpiredCertificateIsNotReportedIssued(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	label := uniqueLabel("expire")
	name := label + ".example.com"
	e.point(label)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	is := e.issuer(func(c *acme.Config) { c.Now = clock })
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	st := status(t, is, name)
	if st.State != customdomain.CertIssued {
		t.Fatalf("status = %+v, want issued", st)
	}
	mu.Lock()
	now = st.NotAfter.Add(time.Second)
	mu.Unlock()
	got := status(t, is, name)
	if got.State == customdomain.CertIssued || len(got.Findings) != 1 || got.Findings[0].Code != customdomain.FindingCertExpired {
		t.Fatalf("a second after the certificate expired: %+v, want failed with %s", got, customdomain.FindingCertExpired)
	}

	// Re-verify asks again (the spec's "use Re-verify to trigger a new
	// attempt"): the expired certificate is replaced, not loaded again.
	old := served(t, is, name)
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	if now := served(t, is, name); now.SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Fatalf("after a new request for an expired certificate, handshakes still get the expired one (serial %v)", old.SerialNumber)
	}
}

// served is the certificate a TLS handshake for name gets.
func served(t *testing.T, is *acme.Issuer, name string) *x509.Certificate {
	t.Helper()
	c, err := is.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// TestRequestRenewsAnExpiringCertificate: the engine's Re-verify of a
// domain whose certificate expires soon (CERT_EXPIRING) requests it again,
// and that request renews it now: a new certificate is served, not the
// stored one loaded again. Before, only an expired one was renewed.
func TestRequestRenewsAnExpiringCertificate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	label := uniqueLabel("expiring")
	name := label + ".example.com"
	e.point(label)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	is := e.issuer(func(c *acme.Config) { c.Now = clock })
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	st := status(t, is, name)
	if st.State != customdomain.CertIssued {
		t.Fatalf("status = %+v, want issued", st)
	}
	mu.Lock()
	now = st.NotAfter.Add(-st.NotAfter.Sub(st.NotBefore) / 5) // a fifth of its lifetime left
	mu.Unlock()
	old := served(t, is, name)
	if err := is.Request(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	e.waitChange(name)
	if now := served(t, is, name); now.SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Fatalf("after a new request for a certificate a fifth of whose lifetime is left, handshakes still get it (serial %v)", old.SerialNumber)
	}
}
