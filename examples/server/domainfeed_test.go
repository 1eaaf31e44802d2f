package main

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// removalBound is how soon a domain removed through one process must stop
// being served by another on the same database. The spec says
// "immediately"; the change feed takes milliseconds, and the bound stays
// well under the engine's periodic refresh (2 s), which alone would miss
// it most of the time.
const removalBound = 500 * time.Millisecond

// TestRemovalStopsEveryProcess runs two server processes on one
// PostgreSQL schema: a domain verified through A is served by B too, and
// once A answers the DELETE, B answers 404 for its Host to every request
// sent removalBound later. Their change feed is PostgreSQL's
// LISTEN/NOTIFY, or Redis pub/sub with -redis.
func TestRemovalStopsEveryProcess(t *testing.T) {
	testenv.PostgresDSN(t)
	bin := builds.Build(t, ".")
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"PostgreSQL", false}, {"Redis", true}} {
		t.Run(tc.name, func(t *testing.T) {
			zone, dns := memzone.NewTestServer(t, "example.com.")
			if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
				libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.test."},
			}); err != nil {
				t.Fatal(err)
			}
			common := []string{"-addr", "127.0.0.1:0", "-db", testenv.PostgresSchema(t), "-keys", planKey + ":pro",
				"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.test"}
			if tc.redis {
				common = append(common, "-redis", testenv.RedisURL(t), "-redis-prefix", testenv.RedisPrefix(t, testenv.RedisClient(t), "server"))
			}
			var bases []string
			for _, extra := range [][]string{nil, {"-migrate=false"}} { // A migrates the fresh schema
				cmd := exec.Command(bin, append(common, extra...)...)
				cmd.Env = serverEnv()
				bases = append(bases, strings.TrimSuffix(testenv.StartListening(t, cmd).Addr, "/v1"))
			}
			a, b := bases[0], bases[1]

			if status, _, body := call(t, "POST", a+"/dashboard/api/domains", planKey, "", `{"name":"shop.example.com"}`); status != 201 {
				t.Fatalf("add through A: %d %s", status, body)
			}
			if status, _, body := call(t, "POST", a+"/dashboard/api/domains/shop.example.com/verify", planKey, "", ""); status != 200 || !strings.Contains(body, `"status":"active"`) {
				t.Fatalf("verify through A: %d %s", status, body)
			}
			// B learns of the activation too (by the feed, or its periodic
			// refresh: this wait is not what the test measures).
			waitStatus(t, b, "shop.example.com", http.StatusOK, 10*time.Second)

			status, _, body := call(t, "DELETE", a+"/dashboard/api/domains/shop.example.com", planKey, "", "")
			if status != 204 {
				t.Fatalf("remove through A: %d %s", status, body)
			}
			took := waitStatus(t, b, "shop.example.com", http.StatusNotFound, removalBound)
			t.Logf("B answered 404 to a request sent %v after A answered the DELETE", took)
			if status, _, _ := call(t, "GET", a+"/", "", "shop.example.com", ""); status != 404 {
				t.Fatalf("A after the removal: %d, want 404", status)
			}
		})
	}
}

// waitStatus asks base for / on host until it answers want, failing t
// when a request sent more than bound from now does not; it returns when
// the request answered with want was sent. The bound is on when a request
// is sent, not on when a loaded machine gets its answer back.
func waitStatus(t *testing.T, base, host string, want int, bound time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		sent := time.Since(began)
		status, _, body := call(t, "GET", base+"/", "", host, "")
		if status == want {
			return sent
		}
		if sent > bound {
			t.Fatalf("%s for Host %s: %d %s to a request sent %v later, want %d", base, host, status, body, sent, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestRemovalReachesAProcessWhoseFeedIsLost: docs/custom-domains.md
// ("Across replicas") promises that while a replica's change feed is
// broken it reloads its routing table every 2 seconds. Two processes on
// one MariaDB database (which has no feed of its own) follow Redis; B's
// link to Redis is paused (a black hole) or cut, so the removal's
// message never reaches it, and B still stops serving the removed domain
// within the periodic refresh and a margin for busy cores.
func TestRemovalReachesAProcessWhoseFeedIsLost(t *testing.T) {
	t.Parallel()
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	const bound = customdomain.DefaultRefreshEvery + time.Second
	for _, fault := range []struct {
		name  string
		apply func(*faultproxy.Proxy)
	}{
		{"paused", (*faultproxy.Proxy).Pause},
		{"cut", (*faultproxy.Proxy).Cut},
	} {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			zone, dns := memzone.NewTestServer(t, "example.com.")
			if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
				libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.test."},
			}); err != nil {
				t.Fatal(err)
			}
			prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
			proxy := faultproxy.Start(t, o.Addr)
			common := []string{"-addr", "127.0.0.1:0", "-db", testenv.MySQLDatabase(t), "-keys", planKey + ":pro",
				"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.test", "-redis-prefix", prefix}
			a := startServer(t, append(common, "-redis", o.Addr), nil).base
			b := startServer(t, append(common, "-migrate=false", "-redis", proxy.Addr()), nil).base

			if status, _, body := call(t, "POST", a+"/dashboard/api/domains", planKey, "", `{"name":"shop.example.com"}`); status != 201 {
				t.Fatalf("add through A: %d %s", status, body)
			}
			if status, _, body := call(t, "POST", a+"/dashboard/api/domains/shop.example.com/verify", planKey, "", ""); status != 200 || !strings.Contains(body, `"status":"active"`) {
				t.Fatalf("verify through A: %d %s", status, body)
			}
			waitStatus(t, b, "shop.example.com", http.StatusOK, 10*time.Second)

			fault.apply(proxy)
			defer proxy.Restore()
			if status, _, body := call(t, "DELETE", a+"/dashboard/api/domains/shop.example.com", planKey, "", ""); status != 204 {
				t.Fatalf("remove through A: %d %s", status, body)
			}
			took := waitStatus(t, b, "shop.example.com", http.StatusNotFound, bound)
			t.Logf("B, its feed %s, answered 404 to a request sent %v after A answered the DELETE", fault.name, took)
		})
	}
}
