package httpx

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
)

// Cache keeps the encoded pages and pets (body, ETag, next Link) until a
// create changes them, in this process and, over a change feed
// (changefeed.KindPets), in the others; docs/performance.md says which
// pages a create drops and how long the others keep theirs. Without a
// feed, either the process is the store's only writer (an in-memory
// store), or something else hands Apply the store's changes, as
// bunstore's WatchChanges does on SQLite.
type Cache struct {
	feed changefeed.Feed
	now  func() time.Time

	mu      sync.RWMutex
	entries map[string]*encoded
	bytes   int    // the entries' cost (entryCost)
	gen     uint64 // counts the changes: an answer read before one is not kept
	live    bool   // entries may be kept: no feed is needed, or it is live

	unpublished int64                // the lowest id created and not yet published; 0 for none
	statuses    []petstore.PetStatus // the statuses of the creates not yet published ("" for none)
	publishing  bool                 // a goroutine publishes
	lastCreate  time.Time            // of the latest create this process made
}

// maxCacheBytes bounds what a Cache holds, by entryCost; past it, it
// starts over.
const maxCacheBytes = 32 << 20

// entryCost is about the memory an entry takes: its key, body and
// headers, and its map slot and struct (entryOverhead). Counting bodies
// alone let a flood of empty pages, each a cursor of its own, hold
// gigabytes.
func entryCost(key string, e *encoded) int {
	return entryOverhead + len(key) + len(e.body) + len(e.etag) + len(e.link)
}

// entryOverhead is an entry's cost beside its strings: the map slot,
// the encoded struct and the slice and string headers, rounded up.
const entryOverhead = 256

// CacheMaxAge is how long a Cache with a feed keeps an answer.
const CacheMaxAge = 10 * time.Second

// encoded is one answer as it is sent; link is its next page's Link.
type encoded struct {
	body       []byte
	etag, link string
	expires    time.Time // zero: kept until a create
	page       bool      // a page (not a pet), with:
	status     petstore.PetStatus
	lastID     int64 // its last pet's id
}

// NewCache returns an empty cache. With a feed it publishes this
// process's creates, and keeps nothing until Apply hands it KindLive.
func NewCache(feed changefeed.Feed) *Cache {
	return &Cache{feed: feed, now: time.Now, entries: map[string]*encoded{}, live: feed == nil}
}

// Apply takes a change from the feed: KindPets drops the pages a create
// of its id and statuses may have changed (all, for an id it cannot read);
// KindLost and KindLive empty the cache, and from KindLost to KindLive
// nothing is kept.
func (c *Cache) Apply(ch changefeed.Change) {
	if c == nil {
		return
	}
	switch ch.Kind {
	case changefeed.KindPets:
		id, statuses := changefeed.ParsePetsID(ch.ID)
		c.change(ch.Kind, id, statuses...)
	case changefeed.KindLost, changefeed.KindLive:
		c.change(ch.Kind, 0)
	}
}

// change drops the pages a create of pet id may have changed, or every
// entry when id is 0: pets are only created, with ids above all before,
// so only a last page (no next Link) of their statuses or of all, or one
// that reaches past id. statuses are those of the pets created; none, or
// "" among them, means any status.
func (c *Cache) change(kind string, id int64, statuses ...petstore.PetStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.live = kind == changefeed.KindLive || kind == changefeed.KindPets && c.live
	anyStatus := len(statuses) == 0 || slices.Contains(statuses, "")
	for k, e := range c.entries {
		if id <= 0 || e.page && (e.link == "" || id <= e.lastID) && (anyStatus || e.status == "" || slices.Contains(statuses, e.status)) {
			delete(c.entries, k)
			c.bytes -= entryCost(k, e)
		}
	}
}

// created drops what a create in this process changed and tells the
// other processes, off the request: one publish at a time, each covering
// every create since the last began (by the lowest id among them). A 5xx
// may have committed: pet is then zero, which means every page.
func (c *Cache) created(pet petstore.Pet, err error) {
	if c == nil || err != nil && ErrorStatus(err) < 500 {
		return
	}
	c.change(changefeed.KindPets, pet.ID, pet.Status)
	if c.feed == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.owe(max(pet.ID, 1), pet.Status) // id 1 and no status: every page
	c.lastCreate = c.now()
	if !c.publishing {
		c.publishing = true
		go c.publish()
	}
}

// owe records creates from id on, of statuses, as not yet published.
// c.mu is held.
func (c *Cache) owe(id int64, statuses ...petstore.PetStatus) {
	if c.unpublished == 0 || id < c.unpublished {
		c.unpublished = id
	}
	for _, st := range statuses {
		if !slices.Contains(c.statuses, st) {
			c.statuses = append(c.statuses, st)
		}
	}
}

// publish tells the feed of the creates since the last publish until none
// is left. A failed publish (a link cut or paused) is tried again, with
// the creates since merged in, until it goes through or CacheMaxAge has
// passed since the latest of them, by when what the other processes kept
// from before it has expired anyway.
func (c *Cache) publish() {
	failures := 0
	for {
		c.mu.Lock()
		id, all, last := c.unpublished, c.statuses, c.lastCreate
		c.unpublished, c.statuses, c.publishing = 0, nil, id != 0
		c.mu.Unlock()
		if id == 0 {
			return
		}
		statuses := slices.Clone(all)
		if slices.Contains(statuses, "") {
			statuses = nil // one had no status: name none, which means any
		}
		slices.Sort(statuses)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.feed.Publish(ctx, changefeed.Change{Kind: changefeed.KindPets, ID: changefeed.PetsID(id, statuses)})
		cancel()
		if err == nil {
			failures = 0
			continue
		}
		failures++
		if c.now().Sub(last) >= CacheMaxAge {
			failures = 0 // given up: the others' copies have expired
			continue
		}
		c.mu.Lock()
		c.owe(id, all...)
		c.mu.Unlock()
		time.Sleep(changefeed.Backoff(failures))
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

// put keeps e under key unless a create came since gen.
func (c *Cache) put(key string, gen uint64, e *encoded) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || !c.live {
		return
	}
	if c.bytes+entryCost(key, e) > maxCacheBytes {
		c.entries, c.bytes = map[string]*encoded{}, 0
	}
	if c.feed != nil {
		e.expires = c.now().Add(CacheMaxAge)
	}
	if old := c.entries[key]; old != nil {
		c.bytes -= entryCost(key, old)
	}
	c.entries[key] = e
	c.bytes += entryCost(key, e)
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

// encode makes the answer of v: its JSON and strong ETag. A page's ETag
// covers its next Link too: a full last page gains one, its body the same,
// when a pet is created after it, and a client revalidating that page must
// not be told by a 304 that the answer it holds, without one, is current.
func encode(v any, link string) (*encoded, error) {
	b, err := marshalJSON(v, "")
	if err != nil {
		return nil, err
	}
	etag := ETag(b)
	if link != "" {
		etag = ETag(append(append([]byte(nil), b...), link...))
	}
	return &encoded{body: b, etag: etag, link: link}, nil
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
