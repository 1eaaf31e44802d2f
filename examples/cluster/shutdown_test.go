package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestShutdownWithAPausedDatabaseIsBounded: with the database's link
// paused, a process told to stop (SIGTERM) exits within its 15 s, as
// examples/server does. Before, closing its pool waited 5 s on each
// statement a connection freed over the paused link: with the pool's
// connections open the process outlived any grace period and had to be
// killed.
func TestShutdownWithAPausedDatabaseIsBounded(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresSchema(t)
	proxy, proxied := faultproxy.StartFor(t, dsn)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "cluster")
	key := "psk_cluster_stop_" + random(t) + random(t)
	u, p := startProcess(t, builds.Build(t, "."), "-migrate", "-db", proxied, "-redis", testenv.RedisURL(t),
		"-redis-prefix", prefix, "-keys", key+":enterprise:100000/1000000")
	// Concurrent creates over a slow link open the pool's connections.
	proxy.SetLatency(50 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, u+"/pets", strings.NewReader(`{"name":"Stop","categoryId":`+strconv.Itoa(i+1)+`}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			if res, err := http.DefaultClient.Do(req); err != nil {
				t.Error(err)
			} else if res.Body.Close(); res.StatusCode != http.StatusCreated {
				t.Errorf("a create before the pause: %d", res.StatusCode)
			}
		})
	}
	wg.Wait()
	proxy.Pause()
	defer proxy.Restore()
	begun := time.Now()
	p.Stop() // kills the process 20 s after SIGTERM
	if took := time.Since(begun); took > 17*time.Second {
		t.Fatalf("the process took %v to exit after SIGTERM with its database paused, want its 15 s at most (and a margin)\nstderr: %s",
			took.Round(time.Millisecond), p.Stderr.String())
	}
}
