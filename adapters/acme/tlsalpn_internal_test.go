package acme

import (
	"testing"

	"github.com/petstorekit/petstore/adapters/memstore"
)

// Without a TLS listener of the server's (TLSPort 0, as examples/server
// passes without -tls-addr) TLS-ALPN-01 must be off: certmagic would
// otherwise answer it on a listener of its own on :443. White-box, because
// which challenge certmagic picks is random: an end-to-end test would pass
// by luck half the time.
func TestTLSALPNNeedsTheServersListener(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tlsPort  int
		disabled bool
	}{
		{"no TLS listener: HTTP-01 only", 0, true},
		{"TLS listener on 8443", 8443, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is, err := New(Config{CA: "https://127.0.0.1:1/dir", Storage: memstore.New(), HTTPPort: 8080, TLSPort: tc.tlsPort})
			if err != nil {
				t.Fatal(err)
			}
			defer is.Close()
			if got := is.acme.DisableTLSALPNChallenge; got != tc.disabled {
				t.Fatalf("TLS-ALPN-01 disabled = %v, want %v", got, tc.disabled)
			}
			if got := is.acme.DisableHTTPChallenge; got {
				t.Fatal("HTTP-01 disabled")
			}
		})
	}
}
