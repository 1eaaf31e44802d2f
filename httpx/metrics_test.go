package httpx_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/ratelimit"
)

// gathered returns the value of name's counter with the given label, or
// -1 when reg has no such series.
func gathered(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// TestBanLoggedOnceAndCounted drives a key into a ban and checks that the
// ban is logged once, when it starts, with the key id and its end, and
// that every decision is counted by result.
func TestBanLoggedOnceAndCounted(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	reg := prometheus.NewRegistry()
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) {
		c.Metrics = reg
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	for range 60 {
		wantStatus(t, e.get(t), 200, "")
	}
	for range 30 {
		e.clock.Advance(time.Second)
		wantStatus(t, e.get(t), 429, petstore.CodeRateLimited)
	}
	banEnd := e.clock.Now().Add(15 * time.Minute)
	for range 3 {
		wantStatus(t, e.get(t), 429, petstore.CodeAPIKeyBanned)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n := strings.Count(out, `msg="ban started"`); n != 1 {
		t.Fatalf("ban logged %d times, want once:\n%s", n, out)
	}
	for l := range strings.Lines(out) {
		if !strings.Contains(l, "ban started") {
			continue
		}
		for _, f := range []string{"level=WARN", "key_id=" + e.key.ID, "until=" + banEnd.UTC().Format("2006-01-02T15:04:05"), `route="GET /v1/pets"`} {
			if !strings.Contains(l, f) {
				t.Errorf("ban line lacks %s:\n%s", f, l)
			}
		}
	}
	for result, want := range map[string]float64{"allowed": 60, "limited": 30, "banned": 3, "fallback": 0, "unavailable": 0} {
		if got := gathered(t, reg, "petstore_ratelimit_decisions_total", "result", result); got != want {
			t.Errorf("decisions{result=%q} = %v, want %v", result, got, want)
		}
	}
	if got := gathered(t, reg, "petstore_http_requests_total", "code", "429"); got != 33 {
		t.Errorf("requests{code=429} = %v, want 33", got)
	}
}

// TestDegradedAndFailedDecisionsCounted checks the two results a healthy
// limiter never gives: a decision made locally while the shared store
// fails counts as fallback, a limiter's error as unavailable.
func TestDegradedAndFailedDecisionsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := &fakeLimiter{counts: map[string]int64{}, degraded: true}
	e := newEnv(t, func(c *httpx.Config) { c.Limiter = f; c.Metrics = reg })
	wantStatus(t, e.do(t, e.req("GET", "/v1/pets", "")), 200, "")
	f.degraded, f.err = false, errors.New("limiter store down")
	wantStatus(t, e.do(t, e.req("GET", "/v1/pets", "")), 503, petstore.CodeUnavailable)
	for result, want := range map[string]float64{"allowed": 0, "limited": 0, "banned": 0, "fallback": 1, "unavailable": 1} {
		if got := gathered(t, reg, "petstore_ratelimit_decisions_total", "result", result); got != want {
			t.Errorf("decisions{result=%q} = %v, want %v", result, got, want)
		}
	}
}
