//go:build !race

// The flood below takes minutes under the race detector, whose heap
// figures are not a deployment's either.

package keycache_test

import (
	"context"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/keycache"
)

// heapMB returns the live heap after a collection, in MB.
func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// peakGrowth runs step n times and returns the most the live heap grew
// over what it was before, in MB, measured after every every-th step;
// c, the cache under test, is kept alive to the end.
func peakGrowth(c *keycache.Cache, n, every int, step func(i int)) float64 {
	before := heapMB()
	worst := 0.0
	for i := range n {
		step(i)
		if (i+1)%every == 0 {
			worst = max(worst, heapMB()-before)
		}
	}
	runtime.KeepAlive(c)
	return worst
}

// TestUnknownTokenFloodMemory: a flood of distinct wrong keys, forty
// times as many as the negative cache holds, keeps it within the 12 MB
// Config.NegativeSize's default promises, however long the flood lasts.
func TestUnknownTokenFloodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 4,000,000 wrong keys")
	}
	c := keycache.New(petstore.NewKeys(memstore.New()), keycache.Config{Now: newClock().Now})
	c.Apply(changefeed.Change{Kind: changefeed.KindLive}) // unknown tokens are kept a minute
	ctx := context.Background()
	buf := []byte("psk_flood_")
	worst := peakGrowth(c, 40*keycache.DefaultNegativeSize, keycache.DefaultNegativeSize, func(i int) {
		token := string(strconv.AppendInt(buf, int64(i), 10))
		if _, err := c.Authenticate(ctx, token); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
			t.Fatalf("wrong key %d: %v", i, err)
		}
	})
	t.Logf("the heap grew by %.1f MB at most", worst)
	if worst > 12 {
		t.Fatalf("a flood of 4,000,000 wrong keys grew the heap by %.1f MB, want at most 12", worst)
	}
}

// TestRefusedClientFloodMemory: wrong keys from far more refused
// addresses than the cache paces keep the pacing within the 6 MB
// maxRefusedClients promises. The store is down (its database closed),
// so that no unknown token is remembered and the heap is the pacing's.
func TestRefusedClientFloodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 2,000,000 addresses")
	}
	store := openStore(t)
	keys := petstore.NewKeys(store)
	clock := newClock()
	c := keycache.New(keys, keycache.Config{Now: clock.Now, Refused: func(netip.Addr) bool { return true }})
	if err := store.DB().Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	worst := peakGrowth(c, 2_000_000, 100_000, func(i int) {
		client := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if _, err := c.AuthenticateClient(ctx, "psk_flood", client); petstore.ErrorCode(err) != petstore.CodeUnavailable {
			t.Fatalf("address %d: %v, want the store's unavailable", i, err)
		}
		clock.Advance(time.Microsecond)
	})
	t.Logf("the heap grew by %.1f MB at most", worst)
	if worst > 6 {
		t.Fatalf("wrong keys from 2,000,000 refused addresses grew the heap by %.1f MB, want at most 6", worst)
	}
}

// TestKeyChurnMemory: a million lookups of 200,000 keys, twenty times as
// many as the cache holds, keep it within the 6 MB Config.Size's default
// promises. Its maps keep some room of the keys dropped (Go maps do not
// shrink), but no more once they hold their fill.
func TestKeyChurnMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("cycles 200,000 keys through a cache of 10,000")
	}
	keys := petstore.NewKeys(memstore.New())
	ctx := context.Background()
	secrets := make([]string, 20*keycache.DefaultSize)
	for i := range secrets {
		_, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		secrets[i] = secret
	}
	c := keycache.New(freshStrings{keys}, keycache.Config{Now: newClock().Now})
	worst := peakGrowth(c, 5*len(secrets), len(secrets), func(i int) {
		if _, err := c.Authenticate(ctx, secrets[i%len(secrets)]); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("the heap grew by %.1f MB at most", worst)
	if worst > 6 {
		t.Fatalf("a million lookups of 200,000 keys grew the heap by %.1f MB, want at most 6", worst)
	}
}

// freshStrings copies the strings of the keys next returns, as a SQL
// store's answer is read into new ones: memstore's share the store's.
type freshStrings struct{ next petstore.Authenticator }

func (a freshStrings) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	key, err := a.next.Authenticate(ctx, token)
	key.ID, key.ProjectID, key.Plan = strings.Clone(key.ID), strings.Clone(key.ProjectID), petstore.Plan(strings.Clone(string(key.Plan)))
	return key, err
}
