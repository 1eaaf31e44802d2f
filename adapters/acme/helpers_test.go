package acme_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/acme/acmetest"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/internal/testenv"
)

// env is a complete local ACME setup: a DNS server for example.com whose
// names point at 127.0.0.1, Pebble validating against it, and plain-HTTP
// and TLS listeners on loopback where the issuers answer challenges and
// serve certificates.
type env struct {
	t        *testing.T
	zone     *memzone.Provider
	dns      *memzone.Server
	ca       *acmetest.Pebble
	store    *memstore.Store
	httpAddr string
	tlsAddr  string
	httpPort int
	tlsPort  int
	changes  chan string
	mu       sync.Mutex
	denied   map[string]bool
	mux      *switchHandler
	logs     *testenv.Buffer // Pebble's and the issuers' logs, printed if the test fails
}

// switchHandler lets a test swap the issuer behind the listeners.
type switchHandler struct {
	mu sync.Mutex
	is *acme.Issuer
}

func (s *switchHandler) get() *acme.Issuer { s.mu.Lock(); defer s.mu.Unlock(); return s.is }

func newEnv(t *testing.T, validity time.Duration, caaIDs ...string) *env {
	t.Helper()
	return newEnvWith(t, acmetest.Options{Validity: validity, CAAIdentities: caaIDs})
}

// newEnvWith is newEnv with Pebble's options (the addresses are filled in).
func newEnvWith(t *testing.T, opts acmetest.Options) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), changes: make(chan string, 16), denied: map[string]bool{}, mux: &switchHandler{}, logs: &testenv.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the CA and the issuers:\n%s", e.logs)
		}
	})
	if opts.Log == nil {
		opts.Log = e.logs
	}
	e.zone, e.dns = memzone.NewTestServer(t, "example.com.")
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.httpAddr, e.tlsAddr = httpLn.Addr().String(), tlsLn.Addr().String()
	e.httpPort, e.tlsPort = httpLn.Addr().(*net.TCPAddr).Port, tlsLn.Addr().(*net.TCPAddr).Port
	opts.DNSServer, opts.HTTPPort, opts.TLSPort = e.dns.Addr(), e.httpPort, e.tlsPort
	e.ca = acmetest.Start(t, opts)

	quiet := log.New(io.Discard, "", 0)
	hs := &http.Server{ErrorLog: quiet, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mux.get().HTTPHandler(http.NotFoundHandler()).ServeHTTP(w, r)
	})}
	go hs.Serve(httpLn)
	ts := &http.Server{
		ErrorLog: quiet,
		Handler:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from ", r.Host) }),
		TLSConfig: &tls.Config{
			NextProtos: []string{"http/1.1", "acme-tls/1"},
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return e.mux.get().GetCertificate(h)
			},
		},
	}
	go ts.ServeTLS(tlsLn, "", "")
	t.Cleanup(func() { hs.Close(); ts.Close() })
	return e
}

// point makes name (relative to example.com) resolve to 127.0.0.1.
func (e *env) point(name string) {
	e.t.Helper()
	_, err := e.zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.Address{Name: name, TTL: time.Minute, IP: netip.MustParseAddr("127.0.0.1")},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deny(name string, denied bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.denied[name] = denied
}

// issuer returns a new issuer on the env's store and CA; the first one
// made also serves the listeners.
func (e *env) issuer(mod func(*acme.Config)) *acme.Issuer {
	e.t.Helper()
	cfg := acme.Config{
		CA: e.ca.DirectoryURL(), RootCAs: e.ca.ServerRootPEM(), Email: "ops@example.com",
		Storage:  e.store,
		Resolver: dnsresolver.New(e.dns.Addr()),
		OnChange: func(name string) { e.changes <- name },
		Allowed: func(_ context.Context, name string) bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			return !e.denied[name]
		},
		HTTPPort: e.httpPort, TLSPort: e.tlsPort, ListenHost: "127.0.0.1",
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&cfg)
	}
	is, err := acme.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { is.Close() })
	e.mux.mu.Lock()
	if e.mux.is == nil {
		e.mux.is = is
	}
	e.mux.mu.Unlock()
	return is
}

// waitChange waits for OnChange(name); obtaining takes seconds.
func (e *env) waitChange(name string) {
	e.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-e.changes:
			if got == name {
				return
			}
		case <-timeout:
			e.t.Fatalf("no certificate change for %s within 30s", name)
		}
	}
}

// handshake dials the TLS listener for name and returns the verified leaf.
func (e *env) handshake(name string) (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", e.tlsAddr, &tls.Config{ServerName: name, RootCAs: e.ca.IssuedRoots()})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// labels numbers the names of tests that obtain or renew certificates:
// certmagic keeps active challenges, renewal jobs and their failure
// backoff per name in process-wide state. Two parallel tests obtaining the
// same name from their own CAs would answer each other's challenges, so
// one's validation fails and certmagic retries only a minute later; two
// tests, or two runs of one test (-count), renewing the same name would
// share one backoff, and one's cancelled or refused renewal would hold
// back the other's for a minute.
var labels atomic.Int64

// uniqueLabel returns label with a number no other call in this process gets.
func uniqueLabel(label string) string { return fmt.Sprintf("%s%d", label, labels.Add(1)) }

// logWait is a slog.Handler that notes when a message containing one of
// msgs is logged, for a test to wait for what the issuer did in the
// background. With after set, only messages logged once after is closed
// count.
type logWait struct {
	msgs  []string
	after chan struct{}
	once  sync.Once
	seen  chan struct{}
}

func newLogWait(msgs ...string) *logWait { return &logWait{msgs: msgs, seen: make(chan struct{})} }

func (w *logWait) Enabled(context.Context, slog.Level) bool { return true }

func (w *logWait) Handle(_ context.Context, r slog.Record) error {
	if w.after != nil {
		select {
		case <-w.after:
		default:
			return nil
		}
	}
	for _, m := range w.msgs {
		if strings.Contains(r.Message, m) {
			w.once.Do(func() { close(w.seen) })
		}
	}
	return nil
}

func (w *logWait) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *logWait) WithGroup(string) slog.Handler      { return w }

// wait waits for the message; 30 s is a guard against a hang, not a
// timing assertion.
func (w *logWait) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("none of %q was logged", w.msgs)
	}
}
