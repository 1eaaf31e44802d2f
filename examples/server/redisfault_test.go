package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestSlowRedisIsNotUnreachable is issue 28's fail-closed case, through
// the fault proxy: with -ratelimit-fail closed, a Redis that answers in
// 1.5 s (past the limiter's 1 s timeout), or not at all (paused), is
// decided locally, so requests are served and /readyz stays 200; once
// Redis refuses connections, requests are 503 and /readyz fails; when it
// is back, both recover.
func TestSlowRedisIsNotUnreachable(t *testing.T) {
	proxy, base, ready := failClosedServer(t)
	if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
		t.Fatalf("before any fault: %d", code)
	}

	proxy.SetLatency(750 * time.Millisecond) // 1.5 s a round trip
	for i := range 12 {
		if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
			t.Fatalf("request %d with Redis slow: %d, want 200: a slow Redis is decided locally", i+1, code)
		}
	}
	if code := ready(); code != 200 {
		t.Fatalf("/readyz with Redis slow: %d, want 200", code)
	}

	proxy.Restore()
	proxy.Pause() // a black hole: calls hang until their timeout
	for i := range 12 {
		if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
			t.Fatalf("request %d with Redis paused: %d, want 200: a paused Redis is decided locally", i+1, code)
		}
	}
	if code := ready(); code != 200 {
		t.Fatalf("/readyz with Redis paused: %d, want 200", code)
	}

	proxy.Restore()
	proxy.Cut()
	until(t, 15*time.Second, "requests answer 503 while Redis refuses connections", func() bool {
		return get(t, base+"/v1/pets", faultKey).StatusCode == 503
	})
	// /readyz answers from a copy at most a second old.
	until(t, 1500*time.Millisecond, "/readyz is 503 while Redis refuses connections", func() bool { return ready() == 503 })

	proxy.Restore()
	until(t, 15*time.Second, "requests are served once Redis is back", func() bool {
		return get(t, base+"/v1/pets", faultKey).StatusCode == 200
	})
	until(t, 5*time.Second, "/readyz is 200 once Redis is back", func() bool { return ready() == 200 })
}

// TestReadyzRecoversWithoutAPITraffic: with -ratelimit-fail closed, a
// load balancer takes the server out of rotation while /readyz names
// Redis unreachable, so no API request comes; once Redis is back, /readyz
// must say so on its own, or the server never gets traffic again.
func TestReadyzRecoversWithoutAPITraffic(t *testing.T) {
	proxy, base, ready := failClosedServer(t)
	if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
		t.Fatalf("before any fault: %d", code)
	}
	proxy.Cut()
	until(t, 15*time.Second, "requests answer 503 while Redis refuses connections", func() bool {
		return get(t, base+"/v1/pets", faultKey).StatusCode == 503
	})
	until(t, 1500*time.Millisecond, "/readyz is 503 while Redis refuses connections", func() bool { return ready() == 503 })

	proxy.Restore() // from here on, only the load balancer's probes
	until(t, 10*time.Second, "/readyz is 200 once Redis is back, with no API request", func() bool { return ready() == 200 })
}

// TestReadyzSeesRedisRefusingWithoutAPITraffic: with -ratelimit-fail
// closed, /readyz turns 503 once Redis refuses connections even when no
// API request has come since (a server not yet in rotation, or a quiet
// one): its own call to Redis, the probe's rate limit, has just failed,
// and the first API request would be refused.
func TestReadyzSeesRedisRefusingWithoutAPITraffic(t *testing.T) {
	t.Parallel()
	proxy, base, ready := failClosedServer(t)
	if code := ready(); code != 200 {
		t.Fatalf("/readyz before any fault: %d", code)
	}
	proxy.Cut()
	until(t, 5*time.Second, "/readyz is 503 while Redis refuses connections, with no API request", func() bool { return ready() == 503 })
	if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 503 {
		t.Fatalf("an API request while /readyz says Redis is unreachable: %d, want 503", code)
	}
	proxy.Restore()
	until(t, 10*time.Second, "/readyz is 200 once Redis is back", func() bool { return ready() == 200 })
}

// failClosedServer starts a server with -ratelimit-fail closed whose
// Redis is behind a fault proxy. It returns the proxy, the server's base
// URL, and a function that answers /readyz's status.
func failClosedServer(t *testing.T) (proxy *faultproxy.Proxy, base string, ready func() int) {
	t.Helper()
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy = faultproxy.Start(t, o.Addr)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", faultKey + ":enterprise:1000/10000",
		"-redis", proxy.Addr(), "-redis-prefix", prefix, "-ratelimit-fail", "closed"}, nil)
	base = srv.base
	ready = func() int {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	return proxy, base, ready
}

// TestFailClosed503CarriesRateLimitHeaders: with -ratelimit-fail closed
// and Redis refusing connections, the 503 still carries X-RateLimit-*, as
// the spec asks of every answer: what this process knows is left of the
// key's minute, which the 503 did not spend.
func TestFailClosed503CarriesRateLimitHeaders(t *testing.T) {
	proxy, base, _ := failClosedServer(t)
	last := get(t, base+"/v1/pets", faultKey)
	if last.StatusCode != 200 {
		t.Fatalf("before any fault: %d", last.StatusCode)
	}
	proxy.Cut()
	var res *http.Response
	until(t, 15*time.Second, "requests answer 503 while Redis refuses connections", func() bool {
		if res = get(t, base+"/v1/pets", faultKey); res.StatusCode == 200 {
			last = res // a share leased before the cut: spent as usual
		}
		return res.StatusCode == 503
	})
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if got, want := res.Header.Get(h), last.Header.Get(h); got != want || got == "" {
			t.Fatalf("503 with Redis cut: %s = %q, want %q as the last 200 said", h, got, want)
		}
	}
}

// TestHealthAndMetricsSeeRedisWithoutAPITraffic: with -ratelimit-fail
// closed the server runs two limiters on Redis, the API's (which the
// dashboard shares) and the probes' (which fails open, so /readyz and
// /metrics answer through an outage). Once Redis refuses connections and
// the probes' limiter has found it so, /healthz and
// petstore_limiter_store_up say so too, as /readyz does, even when no API
// request has met the outage: the operator's three views of one Redis
// agree. They recover with it.
func TestHealthAndMetricsSeeRedisWithoutAPITraffic(t *testing.T) {
	t.Parallel()
	proxy, base, ready := failClosedServer(t)
	storeUp := func() float64 { return value(scrape(t, base+"/metrics"), "petstore_limiter_store_up", nil) }
	health := func() string {
		status, _, body := call(t, "GET", base+"/healthz", "", "", "")
		if status != 200 {
			t.Fatalf("/healthz: %d %s", status, body)
		}
		return body
	}
	if up, h := storeUp(), health(); up != 1 || !strings.Contains(h, `"degraded":false`) {
		t.Fatalf("before any fault: petstore_limiter_store_up %v, /healthz %s", up, h)
	}
	proxy.Cut()
	until(t, 5*time.Second, "/readyz is 503 while Redis refuses connections, with no API request", func() bool { return ready() == 503 })
	if h := health(); !strings.Contains(h, `"degraded":true`) {
		t.Fatalf("/healthz while /readyz says Redis is unreachable: %s, want degraded", h)
	}
	// /metrics answers from a copy at most a second old.
	until(t, 3*time.Second, "petstore_limiter_store_up is 0 while /readyz says Redis is unreachable", func() bool { return storeUp() == 0 })

	proxy.Restore()
	until(t, 10*time.Second, "/readyz is 200 once Redis is back", func() bool { return ready() == 200 })
	if h := health(); !strings.Contains(h, `"degraded":false`) {
		t.Fatalf("/healthz once Redis is back: %s", h)
	}
	until(t, 3*time.Second, "petstore_limiter_store_up is 1 once Redis is back", func() bool { return storeUp() == 1 })
}

// TestSlowRedisIsUp: a Redis 200 ms a round trip away (faultproxy slow)
// is slow, not failing: the API's limiter, which waits 1 s, decides every
// request through it. The probes' own limiter waits at most 400 ms, which
// a call on a new connection (its handshake, then the call) can pass at
// this latency; /healthz must still not say degraded, nor
// petstore_limiter_store_up drop to 0, while the API, the probes and the
// ban polls all call it. Before, they did until a later call succeeded.
func TestSlowRedisIsUp(t *testing.T) {
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, o.Addr)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", faultKey + ":enterprise:1000/10000",
		"-redis", proxy.Addr(), "-redis-prefix", prefix}, nil)
	if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
		t.Fatalf("before the fault: %d", code)
	}
	proxy.SetLatency(100 * time.Millisecond) // 200 ms a round trip
	defer proxy.Restore()
	for i := range 8 {
		if code := get(t, base+"/v1/pets", faultKey).StatusCode; code != 200 {
			t.Fatalf("request %d with Redis slow: %d", i+1, code)
		}
		call(t, "GET", base+"/readyz", "", "", "")
		time.Sleep(250 * time.Millisecond)
		status, _, body := call(t, "GET", base+"/healthz", "", "", "")
		if status != 200 || !strings.Contains(body, `"degraded":false`) {
			t.Fatalf("/healthz with Redis 200 ms away: %d %s, want it not degraded", status, body)
		}
		if up := value(scrape(t, base+"/metrics"), "petstore_limiter_store_up", nil); up != 1 {
			t.Fatalf("petstore_limiter_store_up with Redis 200 ms away: %v, want 1", up)
		}
	}
}
