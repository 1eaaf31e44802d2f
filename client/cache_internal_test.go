package client

import (
	"net/http"
	"strings"
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
