package client

import (
	"container/list"
	"net/http"
	"sync"
)

// Cache remembers the answers of a client's GET requests with their
// ETags, so that the client asks the server whether an answer changed
// (If-None-Match) instead of fetching it again: the server's 304 Not
// Modified has no body and spends none of the plan's quota, only a
// separate allowance ten times as large (docs/rate-limits.md). Every
// request still goes to the server, which alone decides whether an answer
// is current, so a cached page never hides a pet created since, by this
// client or any other.
//
// A Cache holds at most its size in bytes, dropping the least recently
// used answers first. It is safe for concurrent use and may be shared by
// several clients, of the same API or not: answers are kept per API key
// and URL, and a client never sends, or is answered with, what another key
// was.
type Cache struct {
	max int

	mu      sync.Mutex
	size    int
	recency *list.List // of *cacheEntry, most recently used first
	entries map[string]*list.Element
}

// cacheEntry is one remembered answer. Its fields never change once it
// is in a Cache, so a request may use it after it is dropped.
type cacheEntry struct {
	// key is the SHA-256 of the client's API key (and base URL's user
	// info) and the URL without user info: answers are kept per key, and
	// the cache holds no secret.
	key    string
	etag   string
	header http.Header
	body   []byte
	size   int
}

// entryOverhead approximates what an entry costs beyond its strings:
// the map slot, the list element and the structs.
const entryOverhead = 200

// NewCache returns a Cache that holds at most maxBytes of answers
// (bodies, headers and URLs). A page of 20 pets takes about 2 KB, so
// 1 << 20 keeps a few hundred. An answer larger than maxBytes is not kept.
func NewCache(maxBytes int) *Cache {
	return &Cache{max: maxBytes, recency: list.New(), entries: map[string]*list.Element{}}
}

// WithCache makes the client keep its GET answers in cache and revalidate
// them with If-None-Match: an unchanged page or pet is answered 304, and
// the call returns what the client remembered. Once the key's allowance
// of conditional requests is spent (a 429), the client asks in full, on
// the plan's quota, until the 429's Retry-After has passed (the latest
// one, when several such 429s came). nil turns it off (the default).
func WithCache(cache *Cache) Option { return func(c *Client) { c.cache = cache } }

// get returns the entry at key, or nil, and marks it recently used.
func (c *Cache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.recency.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

// put keeps the answer (etag, header, body) at key, dropping the least
// recently used answers to stay within the bound. An answer over the
// bound replaces none: it only drops what was kept at key.
func (c *Cache) put(key, etag string, header http.Header, body []byte) {
	e := &cacheEntry{key: key, etag: etag, header: header, body: body}
	e.size = entryOverhead + len(key) + len(etag) + len(body)
	for k, vs := range header {
		for _, v := range vs {
			e.size += len(k) + len(v)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
	if e.size > c.max {
		return
	}
	c.entries[key] = c.recency.PushFront(e)
	c.size += e.size
	for c.size > c.max {
		c.removeLocked(c.recency.Back().Value.(*cacheEntry).key)
	}
}

// remove drops the answer at key, if any.
func (c *Cache) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
}

func (c *Cache) removeLocked(key string) {
	if el, ok := c.entries[key]; ok {
		c.recency.Remove(el)
		delete(c.entries, key)
		c.size -= el.Value.(*cacheEntry).size
	}
}
