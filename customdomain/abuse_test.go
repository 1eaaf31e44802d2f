package customdomain_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/internal/domaintest"
)

// readCountingStore counts every read of domains and configs.
type readCountingStore struct {
	customdomain.Store
	reads atomic.Int64
}

func (s *readCountingStore) DomainByName(ctx context.Context, name string) (customdomain.Entry, error) {
	s.reads.Add(1)
	return s.Store.DomainByName(ctx, name)
}

func (s *readCountingStore) ListDomains(ctx context.Context, q customdomain.DomainQuery) ([]customdomain.Entry, error) {
	s.reads.Add(1)
	return s.Store.ListDomains(ctx, q)
}

func (s *readCountingStore) DomainConfig(ctx context.Context, projectID string) (customdomain.Config, error) {
	s.reads.Add(1)
	return s.Store.DomainConfig(ctx, projectID)
}

func (s *readCountingStore) ListDomainConfigs(ctx context.Context) ([]customdomain.Config, error) {
	s.reads.Add(1)
	return s.Store.ListDomainConfigs(ctx)
}

// TestRandomHostsCauseNoStoreReads: anyone may send any Host to the edge
// (or any TLS server name, which the certificate layer asks Holds and
// Admits about), and to the challenge path that answers pending domains
// too. A flood of made-up names must be answered from the engine's
// memory, never turned into database reads, while the challenge of a
// domain just added still answers its token and a removed one's does not.
func TestRandomHostsCauseNoStoreReads(t *testing.T) {
	ctx := context.Background()
	store := &readCountingStore{Store: memstore.New()}
	w := domaintest.New(t, domaintest.Options{Projects: projects, Store: store})
	if err := w.Engine.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	front, err := edge.New(edge.Config{
		PlatformHosts: []string{"platform.example"},
		Platform:      http.NotFoundHandler(),
		Router:        w.Engine,
		Challenges:    w.Engine,
		Site:          func(string) http.Handler { return http.NotFoundHandler() },
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(host, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://x"+path, nil)
		r.Host = host
		rec := httptest.NewRecorder()
		front.ServeHTTP(rec, r)
		return rec
	}
	if _, _, err := w.Engine.Add(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	en, err := store.Store.DomainByName(ctx, "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if rec := get("Shop.Example.com.:80", customdomain.ChallengePath); rec.Code != http.StatusOK || rec.Body.String() != en.Token {
		t.Fatalf("challenge of the pending domain just added: %d %q, want 200 and its token %q", rec.Code, rec.Body, en.Token)
	}
	if !w.Engine.Holds("shop.example.com") {
		t.Fatal("Holds(the domain just added) = false")
	}
	store.reads.Store(0)
	for i := range 2000 {
		host := fmt.Sprintf("r%d-%d.example.net", i, time.Now().UnixNano())
		for _, path := range []string{customdomain.ChallengePath, "/", "/.well-known/acme-challenge/abc"} {
			if rec := get(host, path); rec.Code != http.StatusNotFound {
				t.Fatalf("GET %s on %s: %d, want 404", path, host, rec.Code)
			}
		}
		if w.Engine.Holds(host) || w.Engine.Admits(host) {
			t.Fatalf("Holds or Admits(%s) = true", host)
		}
	}
	if n := store.reads.Load(); n != 0 {
		t.Fatalf("6000 requests for made-up hosts read the store %d times, want none", n)
	}
	if err := w.Engine.Remove(ctx, "prj_pro", "shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if rec := get("shop.example.com", customdomain.ChallengePath); rec.Code != http.StatusNotFound || w.Engine.Holds("shop.example.com") {
		t.Fatalf("challenge of a removed domain: %d %q, want 404 and not held", rec.Code, rec.Body)
	}
}

// TestHugeHostIsRefusedCheaply: net/http accepts a Host header of up to a
// megabyte, and a TLS server name is the client's word too. No custom
// domain's name is longer than 253 octets, so such a name is no domain,
// and finding that out must cost next to nothing. Before, a non-ASCII one
// went through IDNA processing whole on every call (half a second of CPU
// per megabyte), several times per request.
func TestHugeHostIsRefusedCheaply(t *testing.T) {
	w := domaintest.New(t, domaintest.Options{Projects: projects})
	for _, host := range []string{
		strings.Repeat("é.", 300_000) + "example.com",
		strings.Repeat("a.", 300_000) + "example.com",
		strings.Repeat("a", 1020) + ".example.com",
	} {
		if got := w.Engine.Route(host); got.Kind != customdomain.RouteNone {
			t.Fatalf("Route(%d-byte host) = %v, want none", len(host), got.Kind)
		}
		allocs := testing.AllocsPerRun(5, func() {
			w.Engine.Route(host)
			w.Engine.Admits(host)
			w.Engine.Holds(host)
			w.Engine.ChallengeToken(context.Background(), host)
		})
		if allocs > 8 {
			t.Fatalf("a %d-byte host cost %.0f allocations to refuse, want a handful", len(host), allocs)
		}
	}
}
