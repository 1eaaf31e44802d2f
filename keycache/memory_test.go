//go:build !race

// The flood below takes minutes under the race detector, whose heap
// figures are not a deployment's either.

package keycache_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

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
	before := heapMB()
	worst := 0.0
	buf := []byte("psk_flood_")
	for i := range 40 * keycache.DefaultNegativeSize {
		token := string(strconv.AppendInt(buf, int64(i), 10))
		if _, err := c.Authenticate(ctx, token); petstore.ErrorCode(err) != petstore.CodeUnauthorized {
			t.Fatalf("wrong key %d: %v", i, err)
		}
		if (i+1)%keycache.DefaultNegativeSize == 0 {
			worst = max(worst, heapMB()-before)
		}
	}
	runtime.KeepAlive(c)
	t.Logf("the heap grew by %.1f MB at most", worst)
	if worst > 12 {
		t.Fatalf("a flood of 4,000,000 wrong keys grew the heap by %.1f MB, want at most 12", worst)
	}
}
