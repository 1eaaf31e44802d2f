package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// A refund gives back one admitted request in every running window, and
// nothing once the window it was counted in has ended.
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
	decide()
	if err := l.Refund(ctx, "key:k", limits); err != nil {
		t.Fatal(err)
	}
	if d := decide(); d.Windows[0].Remaining != 3 || d.Windows[1].Remaining != 98 {
		t.Fatalf("after a refund: %+v, want 3 and 98 left", d.Windows)
	}
	now = now.Add(time.Minute) // the minute ended: only the day gives back
	if err := l.Refund(ctx, "key:k", limits); err != nil {
		t.Fatal(err)
	}
	if d := decide(); d.Windows[0].Remaining != 4 || d.Windows[1].Remaining != 98 {
		t.Fatalf("after a refund past the minute: %+v, want 4 and 98 left", d.Windows)
	}
}
