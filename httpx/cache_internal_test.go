package httpx

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
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

// A create drops only what it may have changed: the last pages of its
// status or of all, and pages reaching past its id; never a pet, nor a
// page of another status, nor a full page before it.
func TestCacheDropsWhatACreateChanges(t *testing.T) {
	fill := func(c *Cache) {
		for key, e := range map[string]*encoded{
			"pet":              {},
			"first":            {page: true, lastID: 20, link: "<next>"},
			"last":             {page: true, lastID: 25},
			"sold, last":       {page: true, status: "sold", lastID: 24},
			"pending, first":   {page: true, status: "pending", lastID: 10, link: "<next>"},
			"reaching past 30": {page: true, lastID: 40, link: "<next>"},
		} {
			_, gen := c.get(key)
			c.put(key, gen, e)
		}
	}
	kept := func(c *Cache) (keys []string) {
		for k := range c.entries {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	c := NewCache(nil)
	fill(c)
	c.created(petstore.Pet{ID: 30, Status: "pending"}, nil)
	if got, want := kept(c), []string{"first", "pending, first", "pet", "sold, last"}; !slices.Equal(got, want) {
		t.Errorf("after this process's create: %v, want %v", got, want)
	}
	c = NewCache(nil)
	fill(c)
	c.Apply(changefeed.Change{Kind: changefeed.KindPets, ID: "30"}) // another process's: its status unknown
	if got, want := kept(c), []string{"first", "pending, first", "pet"}; !slices.Equal(got, want) {
		t.Errorf("after another process's create: %v, want %v", got, want)
	}
	c.Apply(changefeed.Change{Kind: changefeed.KindPets, ID: "?"})
	if got := kept(c); len(got) != 0 {
		t.Errorf("after a create of an unknown id: %v, want nothing", got)
	}
	for id, want := range map[string][]string{
		"30:pending":         {"first", "pending, first", "pet", "sold, last"},
		"30:pending,sold":    {"first", "pending, first", "pet"},
		"30:pending,unknown": {"first", "pending, first", "pet"}, // a status it cannot read: any
	} {
		c = NewCache(nil)
		fill(c)
		c.Apply(changefeed.Change{Kind: changefeed.KindPets, ID: id}) // another process's, with statuses
		if got := kept(c); !slices.Equal(got, want) {
			t.Errorf("after another process's create %q: %v, want %v", id, got, want)
		}
	}
}

// A create is published with its pet's status, and a pet without one
// names no status, which every process reads as any.
func TestCachePublishesTheStatus(t *testing.T) {
	feed := &changefeed.Local{}
	got := make(chan changefeed.Change, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = feed.Subscribe(ctx, func(c changefeed.Change) { got <- c }) }()
	if c := <-got; c.Kind != changefeed.KindLive {
		t.Fatalf("first change %v, want live", c)
	}
	c := NewCache(feed)
	for _, tc := range []struct {
		pet  petstore.Pet
		want string
	}{
		{petstore.Pet{ID: 7, Status: petstore.StatusSold}, "7:sold"},
		{petstore.Pet{ID: 8}, "8"},
	} {
		c.created(tc.pet, nil)
		select {
		case ch := <-got:
			if ch != (changefeed.Change{Kind: changefeed.KindPets, ID: tc.want}) {
				t.Errorf("create of %+v published %v, want ID %q", tc.pet, ch, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("create of %+v published nothing", tc.pet)
		}
	}
}

// TestCacheBoundCountsEntries: the bound counts what an entry costs, not
// only its body, so a flood of distinct empty pages (one per cursor) is
// held to it as well.
func TestCacheBoundCountsEntries(t *testing.T) {
	c := NewCache(nil)
	for i := range maxCacheBytes/entryOverhead + 1000 {
		key := "page:" + itoa(int64(i))
		_, gen := c.get(key)
		c.put(key, gen, &encoded{body: []byte("[]\n"), etag: `"e"`, page: true})
	}
	if n := len(c.entries); n*entryOverhead > maxCacheBytes {
		t.Fatalf("%d empty pages kept, at least %d MiB, past the %d MiB bound", n, n*entryOverhead>>20, maxCacheBytes>>20)
	}
}
