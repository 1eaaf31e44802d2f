package ratelimit_test

import (
	"context"
	"testing"
	"time"

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
