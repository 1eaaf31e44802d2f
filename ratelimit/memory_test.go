package ratelimit_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

func TestMemoryStore(t *testing.T) {
	ratelimittest.Run(t, func(testing.TB) ratelimit.Store { return ratelimit.NewMemoryStore() })
}

func TestMemoryStoreSweepsExpiredSubjects(t *testing.T) {
	s := ratelimit.NewMemoryStore()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rates := ratelimit.Rates(ratelimittest.Free)
	for _, sub := range []string{"ip:127.0.0.1", "ip:127.0.0.2", "key:a", "key:b"} {
		if _, err := s.Take(context.Background(), ratelimit.Request{Subject: sub, Rates: rates, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Len(); got != 4 {
		t.Fatalf("Len = %d, want 4", got)
	}
	// A day later every window has ended; requests to each shard sweep it.
	later := now.Add(24*time.Hour + time.Minute)
	for i := range 4096 {
		sub := "ip:10.0." + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		if _, err := s.Take(context.Background(), ratelimit.Request{Subject: sub, Rates: rates, Now: later}); err != nil {
			t.Fatal(err)
		}
	}
	// Every shard has been swept once at the later time, so only the new
	// subjects remain.
	if got, want := s.Len(), 4096; got != want {
		t.Fatalf("Len = %d, want %d: expired subjects must be swept", got, want)
	}
}

// flood sends one request from each of n new addresses at now, and one
// from keep (if not "") every 1,000: a client still sending during the
// flood.
func flood(t testing.TB, s *ratelimit.MemoryStore, n int, now time.Time, keep string) {
	t.Helper()
	rates := ratelimit.Rates(ratelimittest.Free)
	for i := range n {
		sub := fmt.Sprintf("ip:10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if keep != "" && i%1000 == 0 {
			sub = keep
		}
		if _, err := s.Take(context.Background(), ratelimit.Request{Subject: sub, Rates: rates, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMemoryStoreIsCapped(t *testing.T) {
	const capacity = 10_000
	s := ratelimit.NewMemoryStore(ratelimit.MaxSubjects(capacity))
	if got := s.Cap(); got > capacity || got < capacity-64 {
		t.Fatalf("Cap = %d, want %d rounded down to a multiple of 64", got, capacity)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lim := ratelimit.New(s, ratelimit.Config{Clock: func() time.Time { return now }})
	// A key that has used its minute keeps sending through the flood: it
	// is recently used, so it is never the one evicted, and stays refused.
	for range 60 {
		if d, err := lim.Decide(context.Background(), "key:busy", ratelimittest.Free); err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
	}
	flood(t, s, 200_000, now, "key:busy")
	// Keys are kept apart from the evictable addresses: the cap plus one.
	if got := s.Len(); got > s.Cap()+1 {
		t.Fatalf("Len = %d after 200,000 subjects, want at most the cap %d and the key", got, s.Cap())
	}
	// 199,800 new addresses (every 1,000th request is the busy key's).
	if want := uint64(199_800 - s.Cap()); s.Evictions() < want {
		t.Fatalf("Evictions = %d, want at least %d", s.Evictions(), want)
	}
	if d, err := lim.Decide(context.Background(), "key:busy", ratelimittest.Free); err != nil || d.Allowed {
		t.Fatalf("busy key after the flood: %+v, %v; want still refused: its state was evicted", d, err)
	}
}

func TestMemoryStoreDefaultCap(t *testing.T) {
	s := ratelimit.NewMemoryStore()
	if got, want := s.Cap(), ratelimit.DefaultMaxSubjects; got > want || got < want-64 {
		t.Fatalf("Cap = %d, want about %d", got, want)
	}
}

// TestMemoryStoreFloodMemory replays issue 12's flood, 788,362 new
// addresses, on a store with the default cap and reports the heap: run it
// with -v for the figures. It asserts entry counts only; the heap figures
// depend on the runtime and are for the report.
func TestMemoryStoreFloodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 788,362 subjects")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	s := ratelimit.NewMemoryStore()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	flood(t, s, 788_362, now, "")
	peak := heap()
	if got := s.Len(); got > s.Cap() {
		t.Fatalf("Len = %d, want at most %d", got, s.Cap())
	}
	// Once every window has ended, requests sweep each shard.
	flood(t, s, 4096, now.Add(24*time.Hour+time.Minute), "")
	if got := s.Len(); got > 4096 {
		t.Fatalf("Len = %d after the windows ended, want only the 4,096 new subjects", got)
	}
	after := heap()
	runtime.KeepAlive(s)
	mb := func(n uint64) float64 { return float64(n) / (1 << 20) }
	t.Logf("heap: %.1f MB before, %.1f MB after 788,362 subjects (cap %d), %.1f MB once the windows ended",
		mb(before), mb(peak), s.Cap(), mb(after))
}

func TestMemoryStoreAdmin(t *testing.T) {
	ratelimittest.RunAdmin(t, func(testing.TB) ratelimit.Store { return ratelimit.NewMemoryStore() })
}

// TestMemoryStoreEvictsAddressesOnceTheirStateEnds: an address with a full
// window is kept apart from the evictable ones, but only while that state
// lasts. Once its minute has ended it is an address like any other, and a
// flood of new ones evicts it: else every address that once spent its
// minute would stay, past the cap, until its day ended.
func TestMemoryStoreEvictsAddressesOnceTheirStateEnds(t *testing.T) {
	ctx := context.Background()
	s := ratelimit.NewMemoryStore(ratelimit.MaxSubjects(640))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	take := func(n int, ip string, limits petstore.Limits, at time.Time) {
		t.Helper()
		for i := range n {
			sub := fmt.Sprintf("ip:%s.%d.%d", ip, i>>8&255, i&255)
			if _, err := s.Take(ctx, ratelimit.Request{Subject: sub, Rates: ratelimit.Rates(limits), Now: at}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each of these addresses spends its minute in one request: all are
	// kept, past the cap, while their minute lasts.
	take(10_000, "10.1", petstore.Limits{PerMinute: 1, PerDay: 1000}, now)
	if got := s.Len(); got < 10_000 {
		t.Fatalf("Len = %d, want all 10,000 addresses with a full minute kept", got)
	}
	// Their minutes have ended; a flood of new addresses that spend
	// nothing much must find them evictable again.
	take(10_000, "10.2", petstore.Limits{PerMinute: 60, PerDay: 1000}, now.Add(2*time.Minute))
	if got := s.Len(); got > s.Cap() {
		t.Fatalf("Len = %d after the minutes ended, want at most the cap %d", got, s.Cap())
	}
}
