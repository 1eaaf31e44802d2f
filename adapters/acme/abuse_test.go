package acme_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// readCountingBlobs counts the reads of certificate storage.
type readCountingBlobs struct {
	blobs.Store
	reads atomic.Int64
}

func (s *readCountingBlobs) GetBlob(ctx context.Context, key string) ([]byte, blobs.Info, error) {
	s.reads.Add(1)
	return s.Store.GetBlob(ctx, key)
}

func (s *readCountingBlobs) ListBlobs(ctx context.Context, prefix string) ([]blobs.Info, error) {
	s.reads.Add(1)
	return s.Store.ListBlobs(ctx, prefix)
}

// TestChallengesForUnknownNamesReadNoStorage: anyone can send an HTTP-01
// request (/.well-known/acme-challenge/…) with any Host, or a TLS-ALPN-01
// handshake (ALPN acme-tls/1) with any server name. For names that are no
// custom domain of the platform, they are refused without a read of the
// certificate storage, which is the database. Before, each was a read
// (certmagic looks for another process's challenge there).
func TestChallengesForUnknownNamesReadNoStorage(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*acme.Config)
	}{
		{"Held", func(c *acme.Config) { c.Held = func(context.Context, string) bool { return false } }},
		{"Allowed", func(*acme.Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &readCountingBlobs{Store: memstore.New()}
			cfg := acme.Config{
				CA: "https://127.0.0.1:1/directory", Storage: store, TLSPort: 1,
				Allowed: func(context.Context, string) bool { return false },
			}
			tc.edit(&cfg)
			is, err := acme.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { is.Close() })
			h := is.HTTPHandler(http.NotFoundHandler())
			for i := range 1000 {
				host := fmt.Sprintf("r%d.example.net", i)
				r := httptest.NewRequest(http.MethodGet, "http://"+host+"/.well-known/acme-challenge/Zm9vYmFyYmF6", nil)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != http.StatusNotFound {
					t.Fatalf("HTTP-01 request for %s: %d, want 404", host, rec.Code)
				}
			}
			if n := store.reads.Load(); n != 0 {
				t.Fatalf("1000 HTTP-01 requests for unknown names read the certificate storage %d times, want none", n)
			}
			for i := range 1000 {
				host := fmt.Sprintf("r%d.example.net", i)
				if _, err := is.GetCertificate(&tls.ClientHelloInfo{ServerName: host, SupportedProtos: []string{"acme-tls/1"}}); err == nil {
					t.Fatalf("TLS-ALPN-01 handshake for %s answered", host)
				}
			}
			if n := store.reads.Load(); n != 0 {
				t.Fatalf("1000 TLS-ALPN-01 handshakes for unknown names read the certificate storage %d times, want none", n)
			}
		})
	}
}

// handshakeOver runs one TLS handshake for serverName against is over an
// in-memory pipe and returns the server's error.
func handshakeOver(is *acme.Issuer, serverName string) error {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	go tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
	return tls.Server(s, is.TLSConfig()).Handshake()
}

// TestMadeUpNamesBelowAWildcardReadNoStorageEach: every name one label
// below a wildcard domain is admitted and served with the wildcard's one
// certificate, so anyone can send a new made-up name at each handshake.
// While that certificate is not there yet (the wildcard is issuing), such
// handshakes fail, without each costing reads and lock writes of the
// certificate storage: at most one look for the wildcard's certificate
// per a few seconds. Before, each made-up name was looked up in storage
// and went as far as taking the storage lock for an order refused only
// then.
func TestMadeUpNamesBelowAWildcardReadNoStorageEach(t *testing.T) {
	store := &readCountingBlobs{Store: memstore.New()}
	is, err := acme.New(acme.Config{
		CA: "https://127.0.0.1:1/directory", Storage: store, TLSPort: 1,
		Allowed: func(_ context.Context, name string) bool { return strings.HasSuffix(name, ".shop.example.com") },
		Covered: func(_ context.Context, name string) bool {
			return strings.HasSuffix(name, ".shop.example.com") && !strings.HasPrefix(name, "*.")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { is.Close() })
	for i := range 200 {
		if err := handshakeOver(is, fmt.Sprintf("r%d.shop.example.com", i)); err == nil {
			t.Fatal("handshake answered without the wildcard's certificate")
		}
	}
	if n := store.reads.Load(); n > 4 {
		t.Fatalf("200 handshakes for made-up names below a wildcard read the certificate storage %d times, want a few", n)
	}
}
