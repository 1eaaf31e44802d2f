// Package acmetest runs a real ACME certificate authority, Pebble, inside a
// test: its CA, validation authority and web front end as a library,
// behind an httptest TLS server, validating against a DNS server the test
// names. Nothing leaves the machine.
package acmetest

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
)

// Options configure a Pebble.
type Options struct {
	// DNSServer ("127.0.0.1:port") is where Pebble resolves names and
	// reads DNS-01 TXT records. Required.
	DNSServer string
	// HTTPPort and TLSPort are where Pebble sends HTTP-01 and
	// TLS-ALPN-01 validation requests, on the addresses DNS gives.
	HTTPPort, TLSPort int
	// Validity of issued certificates; 0 is Pebble's default (90 days).
	// A few seconds makes renewal testable.
	Validity time.Duration
	// CAAIdentities announced in the directory's meta; default
	// ["pebble.letsencrypt.org"].
	CAAIdentities []string
	// NoCAAIdentities announces none, as several private CAs do (and
	// Pebble without this package's default).
	NoCAAIdentities bool
	// Log receives Pebble's log lines; nil discards them.
	Log io.Writer
}

// Pebble is a running in-process ACME CA.
type Pebble struct {
	srv *httptest.Server
	ca  *ca.CAImpl

	mu       sync.Mutex
	requests map[string]int // by path
	holds    []*hold
}

// hold keeps the requests whose path starts with prefix waiting.
type hold struct {
	prefix  string
	arrived chan struct{} // closed when the first one arrives
	once    sync.Once
	release chan struct{}
}

// envOnce sets Pebble's environment knobs. They are process-wide and read
// when Pebble starts, so they are set once, before the first one starts:
// no random validation sleeps, no injected bad nonces.
var envOnce sync.Once

// Start starts a Pebble and stops it in tb.Cleanup.
func Start(tb testing.TB, opts Options) *Pebble {
	tb.Helper()
	envOnce.Do(func() {
		os.Setenv("PEBBLE_VA_NOSLEEP", "1")
		os.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	})
	w := opts.Log
	if w == nil {
		w = io.Discard
	}
	logger := log.New(w, "pebble ", 0)
	store := db.NewMemoryStore()
	profile := ca.Profile{Description: "test profile", ValidityPeriod: uint64(opts.Validity / time.Second)}
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": profile})
	validator := va.New(logger, opts.HTTPPort, opts.TLSPort, false, opts.DNSServer, store)
	ids := opts.CAAIdentities
	if len(ids) == 0 && !opts.NoCAAIdentities {
		ids = []string{"pebble.letsencrypt.org"}
	}
	front := wfe.New(logger, store, validator, authority, ids, false, false, 0, 0)
	p := &Pebble{ca: authority, requests: map[string]int{}}
	h := front.Handler()
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests[r.URL.Path]++
		holds := p.holds
		p.mu.Unlock()
		for _, hd := range holds {
			if strings.HasPrefix(r.URL.Path, hd.prefix) {
				hd.once.Do(func() { close(hd.arrived) })
				<-hd.release
			}
		}
		h.ServeHTTP(rw, r)
	}))
	tb.Cleanup(p.srv.Close)
	return p
}

// DirectoryURL is the ACME directory URL.
func (p *Pebble) DirectoryURL() string { return p.srv.URL + wfe.DirectoryPath }

// ServerRootPEM is the PEM of the certificate the ACME server itself
// presents: a client must trust it to talk to the CA.
func (p *Pebble) ServerRootPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
}

// IssuedRoots is a pool with the root that issued certificates chain to.
func (p *Pebble) IssuedRoots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.GetRootCert(0).Cert)
	return pool
}

// Hold keeps every request whose path starts with prefix (such as
// "/finalize-order/") waiting until release is called, so that a test can
// act while an order is under way. arrived is closed when the first one
// arrives. Release is called at the test's cleanup too.
func (p *Pebble) Hold(tb testing.TB, prefix string) (arrived <-chan struct{}, release func()) {
	hd := &hold{prefix: prefix, arrived: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.holds = append(p.holds, hd)
	p.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(hd.release) }) }
	tb.Cleanup(release)
	return hd.arrived, release
}

// Requests counts the requests whose path starts with prefix, e.g.
// "/dir" (directory), "/order-plz" (new order), "/sign-me-up" (new account).
func (p *Pebble) Requests(prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for path, c := range p.requests {
		if strings.HasPrefix(path, prefix) {
			n += c
		}
	}
	return n
}
