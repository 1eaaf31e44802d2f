package httpx_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/keycache"
)

// lookups is a key store's Authenticator that knows no key and counts
// the lookups that reach it.
type lookups struct{ n atomic.Int64 }

func (l *lookups) Authenticate(context.Context, string) (petstore.APIKey, error) {
	l.n.Add(1)
	return petstore.APIKey{}, petstore.UnauthorizedError()
}

// TestTracingKeepsTheKeyCachePacing: a client the rate limiter refuses
// costs the key store at most one lookup a second (keycache), with
// tracing on as without it: the traced Authenticator still hands the
// client's address to the cache.
func TestTracingKeepsTheKeyCachePacing(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"untraced": nil, "traced": sdktrace.NewTracerProvider()} {
		t.Run(name, func(t *testing.T) {
			store := &lookups{}
			cache := keycache.New(store, keycache.Config{Refused: func(netip.Addr) bool { return true }})
			h, err := httpx.New(httpx.Config{Service: petstore.NewService(memstore.New()), Auth: cache, TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				r := apitest.AuthedReq(fmt.Sprintf("psk_wrongKey%dZq4Xw8Lm2Rt6Vn9Hc3Kp", i), "GET", "/v1/pets", "")
				r.RemoteAddr = "192.0.2.7:4321"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 401 {
					t.Fatalf("wrong key %d: %d, want 401", i, w.Code)
				}
			}
			if got := store.n.Load(); got != 1 {
				t.Fatalf("5 wrong keys from a refused client cost %d store lookups, want 1 (one a second)", got)
			}
		})
	}
}
