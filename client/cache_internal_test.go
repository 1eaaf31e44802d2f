package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCacheDropsLeastRecentlyUsed: a full Cache drops the answers used
// longest ago, counting a get as a use, and never holds more than its
// bound.
func TestCacheDropsLeastRecentlyUsed(t *testing.T) {
	body := []byte(strings.Repeat("x", 1000))
	one := entryOverhead + len("a") + len(`"e"`) + len(body) // each entry's size
	c := NewCache(2*one + one/2)                             // room for two
	put := func(k string) { c.put(k, `"e"`, http.Header{}, body) }
	kept := func() string {
		var s string
		for _, k := range []string{"a", "b", "c", "d"} {
			if c.get(k) != nil {
				s += k
			}
		}
		return s
	}
	put("a")
	put("b")
	c.get("a") // b is now the least recently used
	put("c")
	c.mu.Lock()
	n, size := len(c.entries), c.size
	c.mu.Unlock()
	if n != 2 || size != 2*one {
		t.Fatalf("%d entries, %d bytes; want 2 of %d", n, size, one)
	}
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil {
		t.Fatal("kept b, used longest ago, instead of a and c")
	}
	put("d") // a was got before c: a goes
	if got := kept(); got != "cd" {
		t.Fatalf("kept %q, want cd", got)
	}
	c.put("c", `"e"`, http.Header{}, make([]byte, 3*one)) // too large: drops the old c too
	if got := kept(); got != "d" {
		t.Fatalf("after an answer over the bound, kept %q, want d", got)
	}
}

// TestCacheKeysHoldNoPassword: a Cache holds no secret, as its doc
// promises, although its keys name URLs: the password of a base URL with
// user info (https://user:pass@host/v1) is not in them, in memory where a
// heap dump or a debugger shows it. The answers are still kept and
// revalidated.
func TestCacheKeysHoldNoPassword(t *testing.T) {
	t.Parallel()
	var revalidated atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"rex"`)
		if r.Header.Get("If-None-Match") == `"rex"` {
			revalidated.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":1,"name":"Rex","categoryId":1}`))
	}))
	t.Cleanup(api.Close)
	base := strings.Replace(api.URL, "http://", "http://user:s3cret@", 1) + "/v1"
	c, err := New(base, "psk_key", WithHTTPClient(api.Client()), WithCache(NewCache(1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if p, err := c.GetPet(context.Background(), 1); err != nil || p.Name != "Rex" {
			t.Fatalf("GetPet: %+v, %v", p, err)
		}
	}
	if n := revalidated.Load(); n != 1 {
		t.Fatalf("%d fetches revalidated, want the second", n)
	}
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	for k := range c.cache.entries {
		if strings.Contains(k, "s3cret") {
			t.Fatalf("the cache key %q holds the base URL's password", k)
		}
	}
}
