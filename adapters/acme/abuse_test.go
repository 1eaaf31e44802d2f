package acme_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
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
