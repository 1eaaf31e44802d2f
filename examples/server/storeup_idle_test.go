package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestStoreUpWithNoTraffic: a server that decides no request at all (no
// API request, no /readyz probe), scraped only on -metrics-addr, which
// decides nothing, still reports Redis as it is: petstore_limiter_store_up
// is 0 while Redis is cut or paused, and 1 again once it is back, as its
// limiters' ban polls find it.
func TestStoreUpWithNoTraffic(t *testing.T) {
	t.Parallel()
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, o.Addr)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", faultKey + ":enterprise:1000/10000",
		"-redis", proxy.Addr(), "-redis-prefix", prefix, "-metrics-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(strings.Join(srv.printed, "\n"))
	if m == nil {
		t.Fatalf("no metrics address printed:\n%s", strings.Join(srv.printed, "\n"))
	}
	storeUp := func() float64 { return value(scrape(t, m[1]), "petstore_limiter_store_up", nil) }
	for _, fault := range []struct {
		name  string
		apply func(*faultproxy.Proxy)
	}{
		{"cut", (*faultproxy.Proxy).Cut},
		{"paused", (*faultproxy.Proxy).Pause},
	} {
		until(t, 5*time.Second, "petstore_limiter_store_up is 1 while Redis answers", func() bool { return storeUp() == 1 })
		fault.apply(proxy)
		until(t, 5*time.Second, "petstore_limiter_store_up is 0 while Redis is "+fault.name+", with no request", func() bool { return storeUp() == 0 })
		proxy.Restore()
		until(t, 10*time.Second, "petstore_limiter_store_up is 1 once Redis is back after being "+fault.name, func() bool { return storeUp() == 1 })
	}
}
