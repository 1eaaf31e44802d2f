package keycache_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/keycache"
	"github.com/petstorekit/petstore/ratelimit"
)

// TestRefusedAddressCostsFewLookups is issue 28's database case through
// the whole request path: an address sends wrong keys until the limiter
// refuses it, then 2,000 more, all different, within a second. The key
// store sees one lookup per wrong key while the address has budget, and
// then at most one a second; a valid key from the address is served,
// cached, with no lookup at all.
func TestRefusedAddressCostsFewLookups(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	pets := memstore.New()
	keys := petstore.NewKeys(pets)
	_, secret, err := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lookups := &countingAuth{next: keys}
	lim := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: clock})
	cache := keycache.New(lookups, keycache.Config{Now: clock, Refused: func(a netip.Addr) bool {
		return lim.Refusing(httpx.LimitSubjects(a.String())[0])
	}})
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(pets), Auth: cache, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	get := func(token string) int {
		r := httptest.NewRequest("GET", "/v1/pets", nil)
		r.RemoteAddr = "192.0.2.9:4000"
		r.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	if code := get(secret); code != http.StatusOK { // the valid key, cached
		t.Fatalf("valid key: %d", code)
	}
	base := lookups.n.Load()
	for i := range 2060 {
		code := get(fmt.Sprintf("psk_wrong_%06d", i))
		if i < 60 && code != http.StatusUnauthorized || i >= 60 && code != http.StatusTooManyRequests {
			t.Fatalf("wrong key %d: %d", i+1, code)
		}
	}
	if got := lookups.n.Load() - base; got > 61 {
		t.Fatalf("2,060 wrong keys in a second cost %d lookups, want the address's 60 and at most 1 more", got)
	}
	n := lookups.n.Load()
	for range 100 {
		if code := get(secret); code != http.StatusOK {
			t.Fatalf("cached valid key from the refused address: %d, want served", code)
		}
	}
	if got := lookups.n.Load() - n; got != 0 {
		t.Fatalf("a cached key cost %d lookups, want none", got)
	}
}
