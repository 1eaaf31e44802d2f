package httpx

import (
	"testing"
	"time"

	"github.com/petstorekit/petstore/changefeed"
)

// With a feed, an answer is kept at most CacheMaxAge: the bound on a
// create whose notice was lost.
func TestCacheMaxAge(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := NewCache(&changefeed.Local{})
	c.now = func() time.Time { return now }
	c.Apply(changefeed.Change{Kind: changefeed.KindLive})
	_, gen := c.get("k")
	c.put("k", gen, &encoded{body: []byte("[]\n"), etag: `"x"`})
	if e, _ := c.get("k"); e == nil {
		t.Fatal("not kept")
	}
	now = now.Add(CacheMaxAge + time.Millisecond)
	if e, _ := c.get("k"); e != nil {
		t.Fatalf("kept past CacheMaxAge")
	}
}
