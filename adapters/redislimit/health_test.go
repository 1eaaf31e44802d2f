package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// TestStoreHealthWithoutRequests: a limiter that decides nothing (a server
// with no traffic, scraped for its metrics) still sees Redis go away and
// come back, through its ban poll: cut, Status says degraded and
// unreachable within a second or two; paused, degraded but not
// unreachable (slow is not dead); and healthy again once Redis is back.
func TestStoreHealthWithoutRequests(t *testing.T) {
	t.Parallel()
	direct := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, direct, "rl")
	p := newProxy(t)
	lim := ratelimit.New(redislimit.New(proxied(t, p), prefix), ratelimit.Config{StoreTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	waitFor := func(what string, ok func(ratelimit.Status) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(lim.Status()); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s for 5 s with no request: Status = %+v", what, lim.Status())
			}
		}
	}
	healthy := func(st ratelimit.Status) bool { return !st.Degraded }
	for _, fault := range []struct {
		name        string
		apply       func(*faultproxy.Proxy)
		unreachable bool
	}{
		{"cut", (*faultproxy.Proxy).Cut, true},
		{"paused", (*faultproxy.Proxy).Pause, false},
	} {
		waitFor("Redis up", healthy)
		fault.apply(p)
		waitFor("Redis "+fault.name, func(st ratelimit.Status) bool {
			return st.Degraded && st.Unreachable == fault.unreachable
		})
		p.Restore()
		waitFor("Redis back after being "+fault.name, healthy)
	}
}
