package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

// heapMB returns the live heap after a collection, in MB.
func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// rssMB returns the process's resident memory once freed pages are given
// back, in MB, or 0 where /proc is missing.
func rssMB() float64 {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 64)
			return n / 1024
		}
	}
	return 0
}

// TestFloodKeepsBansAndSpentWindows is issue 28's eviction case: a banned
// key and address, and a key and an address whose day is spent, then
// 300,000 new addresses (IPv4, then IPv6 /64s of five /48s): the bans and
// the spent days hold, the store stays within its cap, and the IPv6 flood
// is counted per /48.
func TestFloodKeepsBansAndSpentWindows(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	store := ratelimit.NewMemoryStore()
	lim := ratelimit.New(store, ratelimit.Config{Clock: func() time.Time { return now }})
	ctx := context.Background()
	decide := func(sub string) ratelimit.Decision {
		t.Helper()
		d, err := lim.Decide(ctx, sub, ratelimittest.Free)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const banned, spent, banned6 = "ip:192.0.2.1", "ip:192.0.2.2", "ip:2001:db8:7:1::/64"
	const bannedKey, spentKey = "key:flood-banned", "key:flood-spent"
	for i := range 1000 {
		if i%60 == 0 {
			now = now.Add(time.Minute)
		}
		if !decide(spent).Allowed || !decide(spentKey).Allowed {
			t.Fatalf("request %d of the day refused", i+1)
		}
	}
	for _, sub := range []string{banned, banned6, bannedKey} {
		for i := 0; decide(sub).Code != petstore.CodeAPIKeyBanned; i++ {
			if i == 61 {
				now = now.Add(time.Second) // past the strike grace
			}
		}
	}
	before, rssBefore := heapMB(), rssMB()
	for i := range 300_000 {
		decide(fmt.Sprintf("ip:10.%d.%d.%d", i>>16, (i>>8)&255, i&255))
	}
	t.Logf("after 300,000 IPv4 addresses: %+v", lim.Stats())
	for i := range 300_000 {
		decide(fmt.Sprintf("ip:2001:db8:%x:%x::/64", 7+i>>16, i&0xffff))
		if i == 299_999 && lim.Stats().Aggregation != 1 {
			t.Fatalf("after 300,000 IPv6 /64s: %+v, want them counted per /48 (aggregation 1)", lim.Stats())
		}
	}
	grown, rssGrown := heapMB()-before, rssMB()-rssBefore
	st := lim.Stats()
	t.Logf("after 600,000 new addresses: %+v, heap grown by %.1f MB, RSS by %.1f MB", st, grown, rssGrown)
	for _, sub := range []string{banned, bannedKey} {
		if d := decide(sub); d.Code != petstore.CodeAPIKeyBanned {
			t.Fatalf("banned %s after the flood: %+v, want still banned", sub, d)
		}
	}
	if d := decide(banned6); d.Code != petstore.CodeAPIKeyBanned {
		t.Fatalf("banned /64 after the flood: %+v, want still banned", d)
	}
	for _, sub := range []string{spent, spentKey} {
		if d := decide(sub); d.Allowed || d.Binding.Name != "day" {
			t.Fatalf("spent %s after the flood: %+v, want refused by the day", sub, d)
		}
	}
	if st.Subjects > int64(store.Cap())+5 || st.Evictions == 0 {
		t.Fatalf("Stats = %+v, want at most the cap %d and the 5 kept ones, with evictions counted", st, store.Cap())
	}
	// The documented bound: about 250 bytes a subject, 100,000 subjects.
	if grown > 64 {
		t.Fatalf("heap grew by %.1f MB, want at most 64 MB", grown)
	}
	if rssGrown > 64 && !raceEnabled {
		t.Fatalf("RSS grew by %.1f MB, want at most 64 MB", rssGrown)
	}
}

// TestRefusingSeesTheAggregate: while a flood has IPv6 clients counted per
// /48, a /64 whose /48 has spent its minute is refused by Decide, so
// Refusing (which a key cache asks to pace a refused client's lookups)
// must say so too, as it does for the /64's own ban or full window.
func TestRefusingSeesTheAggregate(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.MaxSubjects(640)), ratelimit.Config{Clock: func() time.Time { return now }})
	ctx := context.Background()
	for i := range 2000 {
		if _, err := lim.Decide(ctx, fmt.Sprintf("ip:10.0.%d.%d", i>>8, i&255), ratelimittest.Free); err != nil {
			t.Fatal(err)
		}
	}
	if st := lim.Stats(); st.Aggregation != 1 {
		t.Fatalf("Stats = %+v after a flood, want IPv6 counted per /48", st)
	}
	for range ratelimittest.Free.PerMinute {
		if d, err := lim.Decide(ctx, "ip:2001:db8:5:1::/64", ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v; want admitted", d, err)
		}
	}
	const sibling = "ip:2001:db8:5:2::/64" // the same /48
	if d, err := lim.Decide(ctx, sibling, ratelimittest.Free); err != nil || d.Allowed {
		t.Fatalf("%+v, %v; want refused: its /48 has spent its minute", d, err)
	}
	if !lim.Refusing(sibling) {
		t.Fatalf("Refusing(%s) = false, yet Decide refuses it", sibling)
	}
}
