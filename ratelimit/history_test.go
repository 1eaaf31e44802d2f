package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/ratelimit"
)

// TestHistoryMinutes: a subject's last hour, minute by minute, through a
// real Limiter on a fake clock: admitted and refused requests land in the
// minute they were decided, and minutes older than an hour fall away.
func TestHistoryMinutes(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	clock := func() time.Time { return now }
	h := ratelimit.NewHistory(ratelimit.HistoryConfig{})
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{Clock: clock, History: h, BanPolicy: ratelimit.BanPolicy{Disabled: true}})
	limits := petstore.Limits{PerMinute: 3, PerDay: 1000}
	decide := func(n int) {
		t.Helper()
		for range n {
			if _, err := l.Decide(context.Background(), "key:k1", limits); err != nil {
				t.Fatal(err)
			}
		}
	}
	decide(5) // 3 admitted, 2 refused at 12:00
	now = now.Add(2 * time.Minute)
	decide(1) // 1 admitted at 12:02

	m := h.Minutes("key:k1", now)
	if len(m) != ratelimit.HistoryMinutes {
		t.Fatalf("%d minutes, want %d", len(m), ratelimit.HistoryMinutes)
	}
	last, twoAgo := m[len(m)-1], m[len(m)-3]
	if !last.Start.Equal(time.Date(2026, 11, 24, 12, 2, 0, 0, time.UTC)) || last.Admitted != 1 || last.Refused != 0 {
		t.Errorf("this minute: %+v", last)
	}
	if twoAgo.Admitted != 3 || twoAgo.Refused != 2 {
		t.Errorf("two minutes ago: %+v, want 3 admitted, 2 refused", twoAgo)
	}
	if m[len(m)-2].Admitted+m[len(m)-2].Refused != 0 {
		t.Errorf("a quiet minute counts %+v", m[len(m)-2])
	}

	// An hour later 12:00 has left the chart, even though its bucket is
	// the one 13:00 reuses.
	now = now.Add(58 * time.Minute) // 13:00:30
	decide(1)
	m = h.Minutes("key:k1", now)
	var total int64
	for _, x := range m {
		total += x.Admitted + x.Refused
	}
	if total != 2 || m[len(m)-1].Admitted != 1 || m[len(m)-1].Start.Hour() != 13 {
		t.Errorf("an hour later: total %d, last %+v; want the 12:02 and 13:00 requests only", total, m[len(m)-1])
	}
}

// TestHistoryIsBounded: at most MaxSubjects subjects, the least recently
// written first out; Keep leaves other subjects unrecorded.
func TestHistoryIsBounded(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	h := ratelimit.NewHistory(ratelimit.HistoryConfig{MaxSubjects: 3, KeepPrefix: "key:"})
	for _, s := range []string{"key:a", "key:b", "key:c", "ip:192.0.2.1"} {
		h.Record(s, at, true)
	}
	h.Record("key:a", at, true) // a is now the most recent
	h.Record("key:d", at, true) // b goes
	if h.Len() != 3 {
		t.Fatalf("%d subjects kept, want 3", h.Len())
	}
	count := func(s string) int64 { m := h.Minutes(s, at); return m[len(m)-1].Admitted }
	if count("key:b") != 0 || count("key:a") != 2 || count("key:d") != 1 || count("ip:192.0.2.1") != 0 {
		t.Errorf("kept a=%d b=%d d=%d ip=%d; want 2, 0 (evicted), 1, 0 (not kept)", count("key:a"), count("key:b"), count("key:d"), count("ip:192.0.2.1"))
	}
}

// TestReport: what a subject used, without counting anything, and its ban.
func TestReport(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{
		Clock:     func() time.Time { return now },
		History:   ratelimit.NewHistory(ratelimit.HistoryConfig{}),
		BanPolicy: ratelimit.BanPolicy{Strikes: 2, Within: time.Minute, Grace: -1, Duration: 15 * time.Minute},
	})
	limits := petstore.Limits{PerMinute: 2, PerDay: 100}
	for range 2 {
		l.Decide(context.Background(), "key:k1", limits)
	}
	r, err := l.Report(context.Background(), "key:k1", limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Windows) != 2 || r.Windows[0].Remaining != 0 || r.Windows[1].Remaining != 98 || !r.BannedUntil.IsZero() {
		t.Fatalf("after 2 requests: %+v", r)
	}
	again, _ := l.Report(context.Background(), "key:k1", limits)
	if again.Windows[1].Remaining != 98 {
		t.Fatal("Report counted a request")
	}
	for range 4 { // refused, then struck out
		l.Decide(context.Background(), "key:k1", limits)
	}
	r, _ = l.Report(context.Background(), "key:k1", limits)
	if want := now.Add(15 * time.Minute); !r.BannedUntil.Equal(want) {
		t.Fatalf("banned until %v, want %v", r.BannedUntil, want)
	}
	if m := r.Minutes[len(r.Minutes)-1]; m.Admitted != 2 || m.Refused != 4 {
		t.Errorf("this minute: %+v, want 2 admitted, 4 refused", m)
	}
}
