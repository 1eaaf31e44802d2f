package httpx

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore/changefeed"
)

// Cache keeps the encoded pages and pets (body, ETag, next Link) until a
// create changes them: exactly in one process, where a create empties it
// before its answer is sent; other processes hear of it over the change
// feed (changefeed.KindPets), keep nothing while it is down, and nothing
// older than CacheMaxAge. Without a feed, the process must be the store's
// only writer (an in-memory store).
type Cache struct {
	feed changefeed.Feed
	now  func() time.Time

	mu      sync.RWMutex
	entries map[string]*encoded
	bytes   int
	gen     uint64 // counts the times it was emptied
	live    bool   // entries may be kept: no feed is needed, or it is live

	unpublished string // the last create not yet published; "" for none
	publishing  bool   // a goroutine publishes
}

// maxCacheBytes bounds the bodies a Cache holds; past it, it starts over.
const maxCacheBytes = 32 << 20

// CacheMaxAge is how long a Cache with a feed keeps an answer.
const CacheMaxAge = 10 * time.Second

// encoded is one answer as it is sent; link is its next page's Link.
type encoded struct {
	body       []byte
	etag, link string
	expires    time.Time // zero: kept until a create
}

// NewCache returns an empty cache. With a feed it publishes this
// process's creates, and keeps nothing until Apply hands it KindLive.
func NewCache(feed changefeed.Feed) *Cache {
	return &Cache{feed: feed, now: time.Now, entries: map[string]*encoded{}, live: feed == nil}
}

// Apply takes a change from the feed: KindPets, KindLost and KindLive
// empty the cache; from KindLost to KindLive nothing is kept.
func (c *Cache) Apply(ch changefeed.Change) {
	if c != nil && (ch.Kind == changefeed.KindPets || ch.Kind == changefeed.KindLost || ch.Kind == changefeed.KindLive) {
		c.empty(ch.Kind)
	}
}

func (c *Cache) empty(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case changefeed.KindLost:
		c.live = false
	case changefeed.KindLive:
		c.live = true
	}
	c.entries, c.bytes = map[string]*encoded{}, 0
	c.gen++
}

// created empties the cache after a create in this process and tells the
// other processes, off the request: one publish at a time, each covering
// every create since the last began (each empties the whole cache).
func (c *Cache) created(id int64) {
	if c == nil {
		return
	}
	c.empty(changefeed.KindPets)
	if c.feed == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unpublished = itoa(id); !c.publishing {
		c.publishing = true
		go c.publish()
	}
}

func (c *Cache) publish() {
	for {
		c.mu.Lock()
		id := c.unpublished
		c.unpublished, c.publishing = "", id != ""
		c.mu.Unlock()
		if id == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.feed.Publish(ctx, changefeed.Change{Kind: changefeed.KindPets, ID: id})
		cancel()
	}
}

// get returns the entry under key, or nil and the generation to put it
// under once read.
func (c *Cache) get(key string) (*encoded, uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.entries[key]
	if e != nil && !e.expires.IsZero() && c.now().After(e.expires) {
		return nil, c.gen // read again, and kept anew
	}
	return e, c.gen
}

// put keeps e under key unless the cache was emptied since gen.
func (c *Cache) put(key string, gen uint64, e *encoded) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || !c.live {
		return
	}
	if c.bytes+len(e.body) > maxCacheBytes {
		c.entries, c.bytes = map[string]*encoded{}, 0
	}
	if c.feed != nil {
		e.expires = c.now().Add(CacheMaxAge)
	}
	c.entries[key] = e
	c.bytes += len(e.body)
}

// serveEncoded answers a read from the cache, or with load's answer,
// which it keeps.
func serveEncoded(w http.ResponseWriter, r *http.Request, c *Cache, key string, load func() (*encoded, error)) error {
	e, gen := c.get(key)
	if e == nil {
		var err error
		if e, err = load(); err != nil {
			return err
		}
		c.put(key, gen, e)
	}
	if e.link != "" {
		w.Header().Set("Link", e.link)
	}
	writeEncoded(w, r, http.StatusOK, e)
	return nil
}

// encode makes the answer of v: its JSON and strong ETag.
func encode(v any, link string) (*encoded, error) {
	b, err := marshalJSON(v, "")
	if err != nil {
		return nil, err
	}
	return &encoded{body: b, etag: ETag(b), link: link}, nil
}

// writeEncoded writes e with its ETag, or, for a 200 whose ETag the
// request's If-None-Match names, 304 Not Modified with no body.
func writeEncoded(w http.ResponseWriter, r *http.Request, status int, e *encoded) {
	w.Header().Set("ETag", e.etag)
	if status == http.StatusOK && noneMatch(r.Header.Values("If-None-Match"), e.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, status, e.body)
}

// noneMatch reports whether If-None-Match names etag, weakly compared
// (RFC 9110 §13.1.2: W/"x" names "x"), or is "*".
func noneMatch(values []string, etag string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}
