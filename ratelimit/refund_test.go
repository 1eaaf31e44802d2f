package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// A refund gives back one admitted request in the windows it was admitted
// in, and none to a window that began since: that one would admit more
// than its quota.
func TestRefund(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }})
	limits := petstore.Limits{PerMinute: 5, PerDay: 100}
	ctx := context.Background()
	decide := func() ratelimit.Decision {
		t.Helper()
		d, err := l.Decide(ctx, "key:k", limits)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	decide()
	admitted := decide().At
	if err := l.Refund(ctx, "key:k", limits, admitted); err != nil {
		t.Fatal(err)
	}
	if d := decide(); d.Windows[0].Remaining != 3 || d.Windows[1].Remaining != 98 {
		t.Fatalf("after a refund: %+v, want 3 and 98 left", d.Windows)
	}
	admitted = decide().At // 3 of the minute, 3 of the day used
	now = now.Add(time.Minute)
	decide() // a new minute: 1 of it used, 4 of the day
	if err := l.Refund(ctx, "key:k", limits, admitted); err != nil {
		t.Fatal(err)
	}
	if d := decide(); d.Windows[0].Remaining != 3 || d.Windows[1].Remaining != 96 {
		t.Fatalf("after refunding a request of the previous minute: %+v, want 3 (the new minute keeps its count) and 96 (the day gives one back) left", d.Windows)
	}
}

// A refund that leaves room in a window that was full takes the window off
// the refused ones at once: Refusing, which paces a refused client's key
// lookups, says so, and the next request is admitted.
func TestRefundOfAFullWindowEndsRefusing(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: func() time.Time { return now }})
	limits := petstore.Limits{PerMinute: 2, PerDay: 100}
	ctx := context.Background()
	var last ratelimit.Decision
	for range 2 {
		d, err := l.Decide(ctx, "ip:192.0.2.1", limits)
		if err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		last = d
	}
	if !l.Refusing("ip:192.0.2.1") {
		t.Fatal("a spent minute is not refusing")
	}
	if err := l.Refund(ctx, "ip:192.0.2.1", limits, last.At); err != nil {
		t.Fatal(err)
	}
	if l.Refusing("ip:192.0.2.1") {
		t.Fatal("Refusing still true after a refund left one request in the minute")
	}
	if d, err := l.Decide(ctx, "ip:192.0.2.1", limits); err != nil || !d.Allowed {
		t.Fatalf("after the refund: %+v, %v; want admitted", d, err)
	}
}
