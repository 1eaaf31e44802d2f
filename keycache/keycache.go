// Package keycache keeps authenticated API keys in memory, so that a
// request whose key was seen recently is authenticated without a database
// round trip.
//
// A Cache wraps a petstore.Authenticator (usually *petstore.Keys). It is
// keyed by the SHA-256 hash of the presented token, never the token
// itself. It holds the keys of successful authentications, at most
// Config.Size, dropping the least recently used; a token the store did
// not know is remembered apart, for a short time and in a bounded set
// (below), so guessing cannot fill the cache; and a store that is
// unavailable is never taken for an answer.
//
// # Staleness
//
// A cached key may outlive a change made to it in the store. How long is
// bounded:
//
//   - In the process that makes the change, not at all: give its
//     petstore.Keys the cache's ChangeHook and Revoke and SetPlan drop the
//     key before they return.
//   - In other processes, while the cache follows a live changefeed
//     (Follow), for as long as the feed takes to deliver the change,
//     normally milliseconds. A feed that breaks reports it, and the cache
//     then forgets everything and falls back to the next rule. LiveTTL
//     bounds the rest, should a change be published nowhere (a process
//     that died between storing and publishing).
//   - With no live feed (SQLite files shared by processes, MySQL), for at
//     most Config.TTL, one second by default: each key costs one store
//     lookup per TTL per process instead of one per request.
//
// Concurrent requests of a token the cache cannot answer share one store
// lookup, unless a key changed since it began (it may have read what
// changed) or it began Config.TTL ago or more (it may never answer): a
// request that comes then asks the store itself. A shared answer is no
// older than a cached one: a request that joined a lookup takes its
// answer only if the lookup began less than Config.TTL before the answer
// came, or after the request arrived, and asks again otherwise.
//
// # Lookups that cost the database nothing
//
// A token the store did not know is remembered too, by its hash, in a
// cache of at most Config.NegativeSize hashes: for Config.NegativeTTL (a
// minute by default) while the cache follows a live feed, so a flood of
// wrong keys costs at most one lookup per distinct key per minute, and for
// Config.TTL at most without one. Any key change the cache hears of
// forgets them all, so a key created or re-enabled works at once, and
// within TTL where no feed tells.
//
// A client the rate limiter refuses (Config.Refused: banned, or out of
// its address's budget of attempts) is served from memory as anyone is,
// so a valid cached key still works; anything else it sends costs at most
// one store lookup a second (AuthenticateClient). Past that budget its
// token is refused as unknown without a lookup, and the rate limiter,
// which already refuses the address, answers.
package keycache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/netip"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
)

// Defaults of Config.
const (
	DefaultSize         = 10_000
	DefaultTTL          = time.Second
	DefaultLiveTTL      = time.Minute
	DefaultNegativeSize = 100_000
	DefaultNegativeTTL  = time.Minute
	// RefusedLookupEvery is the most a refused client's tokens cost: one
	// store lookup per address (an IPv6 client's /64) in this interval.
	RefusedLookupEvery = time.Second
)

// maxRefusedClients bounds the refused addresses whose lookups are paced
// (about 6 MB); past it the older half is dropped at once.
const maxRefusedClients = 100_000

// maxToken mirrors petstore.Keys: longer tokens are refused unhashed.
const maxToken = 512

// Config configures a Cache. The zero value is usable.
type Config struct {
	// Size is the most keys kept; the least recently used is dropped
	// first. Default DefaultSize. At the default, the cache takes at
	// most about 6 MB, the room its maps keep of keys dropped included
	// (about 600 bytes a key).
	Size int
	// TTL is how long an authentication is reused while the cache follows
	// no live feed: the staleness bound across processes then. Default
	// DefaultTTL.
	TTL time.Duration
	// LiveTTL is how long an authentication is reused while the cache
	// follows a live feed, which drops changed keys sooner. Default
	// DefaultLiveTTL; it is never below TTL.
	LiveTTL time.Duration
	// Now is the clock; default time.Now. The cache only measures
	// durations between its readings (time.Time.Sub, Before), so on
	// time.Now's readings every lifetime is on the monotonic clock.
	Now func() time.Time
	// NegativeSize is the most unknown-token hashes kept, the older half
	// dropped at once when they are that many; default
	// DefaultNegativeSize (at most about 12 MB).
	NegativeSize int
	// NegativeTTL is how long an unknown token is answered without a
	// lookup while the cache follows a live feed (TTL at most without
	// one); default DefaultNegativeTTL.
	NegativeTTL time.Duration
	// Refused, when set, reports whether the rate limiter refuses client
	// (banned, or out of its budget of attempts): AuthenticateClient then
	// paces its lookups. It is asked only when the cache cannot answer.
	Refused func(client netip.Addr) bool
}

// Stats counts a cache's lookups since it was made.
type Stats struct {
	Hits     uint64 // answered from memory
	Misses   uint64 // asked of the wrapped Authenticator
	Len      int    // keys held now
	Negative uint64 // unknown tokens answered from memory
	Paced    uint64 // tokens of refused clients refused without a lookup
	Shared   uint64 // answered by another request's lookup of the same token
}

// Cache is a petstore.Authenticator that remembers successful
// authentications. It is safe for concurrent use.
type Cache struct {
	next petstore.Authenticator
	cfg  Config

	mu     sync.Mutex
	lru    *list.List                          // of *entry, most recently used first
	byHash map[[sha256.Size]byte]*list.Element // token hash -> entry
	byID   map[string]*list.Element            // key id -> entry
	// gen counts invalidations. A lookup that started before one may have
	// read what it invalidated, so its result is not kept.
	gen   uint64
	live  bool // following a live feed
	stats Stats

	// base is Config.Now at New. The expiries in neg and paced are
	// durations since it, taken with time.Time.Sub, which reads the
	// monotonic clock where both times carry it (time.Now's do): a
	// system clock set back or forward moves none of them.
	base time.Time
	// neg holds the hashes of unknown tokens until their expiry (since
	// base, in ns), up to half of NegativeSize; then it becomes negOld and the
	// previous negOld goes whole. No hash is ever deleted from either:
	// a Go map keeps the room of deleted entries, and one that dropped
	// its oldest entry for each new one grew, under a flood of distinct
	// tokens, to more than twice the room of what it held.
	neg, negOld map[[sha256.Size]byte]int64
	// paced holds, per refused client, when its next lookup may go (since
	// base, in ns), up to half of maxRefusedClients; then it becomes
	// pacedOld and the previous pacedOld goes whole, as neg does and for
	// the same reason.
	paced, pacedOld map[netip.Addr]int64
	// flights holds the store lookups under way, by token hash, so that
	// concurrent requests of one token cost one lookup.
	flights map[[sha256.Size]byte]*flight
}

// flight is one store lookup under way, which concurrent requests of
// the same token share.
type flight struct {
	gen   uint64        // the Cache's gen when the lookup began
	began time.Time     // and when, on Config.Now
	done  chan struct{} // closed once key and err are set
	key   petstore.APIKey
	err   error
	// ownCtxEnded: the request that made the lookup ended before the
	// store answered, so err is that request's, not the store's.
	ownCtxEnded bool
}

type entry struct {
	hash    [sha256.Size]byte // the same hash petstore.HashAPIKey writes in hex
	key     petstore.APIKey
	expires time.Time
}

var _ petstore.Authenticator = (*Cache)(nil)

// New returns a cache in front of next.
func New(next petstore.Authenticator, cfg Config) *Cache {
	if cfg.Size <= 0 {
		cfg.Size = DefaultSize
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.LiveTTL <= 0 {
		cfg.LiveTTL = DefaultLiveTTL
	}
	cfg.LiveTTL = max(cfg.LiveTTL, cfg.TTL)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NegativeSize <= 0 {
		cfg.NegativeSize = DefaultNegativeSize
	}
	if cfg.NegativeTTL <= 0 {
		cfg.NegativeTTL = DefaultNegativeTTL
	}
	return &Cache{
		next:    next,
		cfg:     cfg,
		base:    cfg.Now(),
		lru:     list.New(),
		byHash:  map[[sha256.Size]byte]*list.Element{},
		byID:    map[string]*list.Element{},
		neg:     map[[sha256.Size]byte]int64{},
		paced:   map[netip.Addr]int64{},
		flights: map[[sha256.Size]byte]*flight{},
	}
}

// Authenticate implements petstore.Authenticator. A key held and not
// expired is returned from memory, after comparing its hash with the
// token's in constant time as petstore.Keys does; anything else is asked
// of the wrapped Authenticator, and only a success is kept. Errors pass
// through unchanged.
func (c *Cache) Authenticate(ctx context.Context, token string) (petstore.APIKey, error) {
	return c.AuthenticateClient(ctx, token, netip.Addr{})
}

// AuthenticateClient is Authenticate for a request from client. A cached
// key is served whoever sends it, and an unknown token remembered as such
// is refused without a lookup. Anything else is asked of the store, in one
// lookup for all the requests of the token that arrive while it runs, for
// Config.TTL at most (one whose own request ends first is asked again for
// theirs), except
// that while Config.Refused reports client refused, it is asked at most
// once per RefusedLookupEvery for the client's address (an IPv6 client's
// /64): past that, the token is refused as unknown without a lookup, and
// the rate limiter that refuses the client answers. The invalid address
// (no client known) is never paced.
func (c *Cache) AuthenticateClient(ctx context.Context, token string, client netip.Addr) (petstore.APIKey, error) {
	return c.authenticate(ctx, token, client, time.Time{})
}

// authenticate is AuthenticateClient for a request that arrived at
// arrived (zero: now), which a request asking again keeps.
func (c *Cache) authenticate(ctx context.Context, token string, client netip.Addr, arrived time.Time) (petstore.APIKey, error) {
	if token == "" || len(token) > maxToken {
		return c.next.Authenticate(ctx, token)
	}
	// The raw sum, not its hex form, of a copy on the stack (a direct
	// conversion of a token longer than 32 bytes is a heap allocation): a
	// hit then allocates nothing.
	var buf [maxToken]byte
	hash := sha256.Sum256(buf[:copy(buf[:], token)])
	now := c.cfg.Now()
	if arrived.IsZero() {
		arrived = now
	}
	c.mu.Lock()
	if el, ok := c.byHash[hash]; ok {
		e := el.Value.(*entry)
		if now.Before(e.expires) && subtle.ConstantTimeCompare(e.hash[:], hash[:]) == 1 {
			c.lru.MoveToFront(el)
			c.stats.Hits++
			key := e.key
			c.mu.Unlock()
			return key, nil
		}
		c.remove(el)
	}
	if c.knownUnknown(hash, now) {
		c.stats.Negative++
		c.mu.Unlock()
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	c.mu.Unlock()
	if client.IsValid() && c.cfg.Refused != nil && c.cfg.Refused(client) && !c.pace(client, now) {
		return petstore.APIKey{}, petstore.UnauthorizedError()
	}
	c.mu.Lock()
	// A lookup of the same token under way since the last invalidation
	// answers this request too; one begun before it may have read what
	// it invalidated, and one begun TTL ago or more may never answer (a
	// connection black-holed, a request with no deadline).
	if f, ok := c.flights[hash]; ok && f.gen == c.gen && now.Sub(f.began) < c.cfg.TTL {
		c.stats.Shared++
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return petstore.APIKey{}, ctx.Err()
		}
		if f.ownCtxEnded && ctx.Err() == nil {
			// The store never answered: the request that asked it
			// ended first. Ask for this one.
			return c.authenticate(ctx, token, client, arrived)
		}
		if f.began.Before(arrived) && c.cfg.Now().Sub(f.began) >= c.cfg.TTL {
			// The store answered slowly: what it read may now be older
			// than the staleness bound, and older than a change this
			// request, made since, would have seen. Ask again: a lookup
			// begun after this request arrived is taken however late.
			return c.authenticate(ctx, token, client, arrived)
		}
		return f.key, f.err
	}
	c.stats.Misses++
	f := &flight{gen: c.gen, began: now, done: make(chan struct{}), err: errAbandoned}
	c.flights[hash] = f
	c.mu.Unlock()
	defer c.land(hash, f)

	key, err := c.next.Authenticate(ctx, token)
	f.key, f.err, f.ownCtxEnded = key, err, err != nil && ctx.Err() != nil
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
			c.rememberUnknown(hash, now, f.gen)
		}
		return key, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != f.gen {
		return key, nil // invalidated meanwhile: what was read may be stale
	}
	if el, ok := c.byID[key.ID]; ok { // another request kept it first
		c.remove(el)
	}
	ttl := c.cfg.TTL
	if c.live {
		ttl = c.cfg.LiveTTL
	}
	// The lifetime counts from before the lookup, when the store's answer
	// may already have been read.
	el := c.lru.PushFront(&entry{hash: hash, key: key, expires: now.Add(ttl)})
	c.byHash[hash] = el
	c.byID[key.ID] = el
	for c.lru.Len() > c.cfg.Size {
		c.remove(c.lru.Back())
	}
	return key, nil
}

// errAbandoned is what the requests sharing a lookup get if it ends
// without an answer (the wrapped Authenticator panicked): never an empty
// key taken for a valid one.
var errAbandoned = petstore.Errorf(petstore.CodeInternal, "key lookup abandoned")

// land ends lookup f of hash: it hands its answer to the requests that
// share it, and the next request of the token finds the cache's answer
// or asks the store again.
func (c *Cache) land(hash [sha256.Size]byte, f *flight) {
	c.mu.Lock()
	if c.flights[hash] == f {
		delete(c.flights, hash)
	}
	c.mu.Unlock()
	close(f.done)
}

// knownUnknown reports whether hash is remembered as an unknown token
// at now. c.mu is held.
func (c *Cache) knownUnknown(hash [sha256.Size]byte, now time.Time) bool {
	exp, ok := c.neg[hash]
	if !ok {
		exp, ok = c.negOld[hash]
	}
	return ok && int64(now.Sub(c.base)) < exp
}

// rememberUnknown keeps hash as an unknown token until NegativeTTL from
// now (TTL at most without a live feed, which alone would tell that the
// token became known), dropping the older half of those kept past
// NegativeSize, unless a key changed since the lookup began (gen): that
// change may have made it known.
func (c *Cache) rememberUnknown(hash [sha256.Size]byte, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if _, ok := c.neg[hash]; !ok && len(c.neg) >= max(c.cfg.NegativeSize/2, 1) {
		c.negOld, c.neg = c.neg, map[[sha256.Size]byte]int64{}
		if c.cfg.NegativeSize < 2 {
			c.negOld = nil // no room for two halves
		}
	}
	ttl := c.cfg.NegativeTTL
	if !c.live {
		ttl = min(ttl, c.cfg.TTL)
	}
	c.neg[hash] = int64(now.Sub(c.base) + ttl)
}

// pace reports whether refused client may cause a lookup now, and if so
// takes its turn.
func (c *Cache) pace(client netip.Addr, now time.Time) bool {
	client = client.Unmap()
	if client.Is6() {
		if p, err := client.Prefix(64); err == nil {
			client = p.Addr()
		}
	}
	n := int64(now.Sub(c.base))
	c.mu.Lock()
	defer c.mu.Unlock()
	next, ok := c.paced[client]
	if !ok {
		next, ok = c.pacedOld[client]
	}
	if ok && n < next {
		c.stats.Paced++
		return false
	}
	if _, ok := c.paced[client]; !ok && len(c.paced) >= maxRefusedClients/2 {
		c.pacedOld, c.paced = c.paced, map[netip.Addr]int64{}
	}
	c.paced[client] = n + int64(RefusedLookupEvery)
	return true
}

// remove drops el. c.mu is held.
func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.byHash, e.hash)
	if c.byID[e.key.ID] == el {
		delete(c.byID, e.key.ID)
	}
}

// Invalidate drops the key with this id, so that its next request asks
// the store again.
func (c *Cache) Invalidate(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if el, ok := c.byID[id]; ok {
		c.remove(el)
	}
	c.forgetUnknown()
}

// Flush drops every key.
func (c *Cache) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flush()
}

func (c *Cache) flush() {
	c.gen++
	c.lru.Init()
	clear(c.byHash)
	clear(c.byID)
	c.forgetUnknown()
}

// forgetUnknown drops every remembered unknown token: a key change may
// have made one known. c.mu is held.
func (c *Cache) forgetUnknown() {
	c.neg, c.negOld = map[[sha256.Size]byte]int64{}, nil
}

// Apply acts on one change from a feed: KindKey drops that key; KindLive
// and KindLost drop every key, since changes may have been missed, and
// switch between LiveTTL and TTL. Other kinds are for others.
func (c *Cache) Apply(ch changefeed.Change) {
	switch ch.Kind {
	case changefeed.KindKey:
		c.Invalidate(ch.ID)
	case changefeed.KindLive, changefeed.KindLost:
		c.mu.Lock()
		defer c.mu.Unlock()
		c.flush()
		c.live = ch.Kind == changefeed.KindLive
	}
}

// Follow applies the changes of feed until ctx is done, and returns
// ctx.Err() then. Run it in its own goroutine.
func (c *Cache) Follow(ctx context.Context, feed changefeed.Feed) error {
	err := feed.Subscribe(ctx, c.Apply)
	// Nothing is heard any more: from now on only TTL bounds staleness.
	c.Apply(changefeed.Change{Kind: changefeed.KindLost})
	return err
}

// ChangeHook returns a hook for petstore.WithKeyChangeHook: it drops the
// changed key from c at once and, when feed is not nil, publishes the
// change to the other processes, telling onError (when not nil) if that
// failed. Publishing waits at most 2 s, so that a feed that is down delays
// a key change only briefly; the other processes then see it when their
// copies expire.
func (c *Cache) ChangeHook(feed changefeed.Feed, onError func(error)) func(ctx context.Context, id string) {
	return func(ctx context.Context, id string) {
		c.Invalidate(id)
		if feed == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := feed.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: id}); err != nil && onError != nil {
			onError(err)
		}
	}
}

// NewKeys returns a key manager over store and a cache in front of it,
// wired together: the manager's Revoke, SetPlan and Ensure drop the key
// from the cache before they return and publish the change on feed (when
// not nil) for the other processes, as ChangeHook does. Serve with the
// cache as the petstore.Authenticator; manage keys with the manager; run
// Follow on the same feed.
func NewKeys(store petstore.KeyStore, feed changefeed.Feed, cfg Config, onError func(error)) (*petstore.Keys, *Cache) {
	c := New(nil, cfg)
	keys := petstore.NewKeys(store, petstore.WithKeyChangeHook(c.ChangeHook(feed, onError)))
	c.next = keys
	return keys, c
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Len = c.lru.Len()
	return s
}
