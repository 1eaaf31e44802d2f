package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestReadyzWithAPausedDatabaseAnswersWithinASecond: a readiness probe
// (Kubernetes gives one 1 s by default) gets its answer within a second
// while the database's link is paused (PostgreSQL, MariaDB), however
// long -db-timeout is: 503 naming the database, not a probe that times
// out after -db-timeout's 5 s.
func TestReadyzWithAPausedDatabaseAnswersWithinASecond(t *testing.T) {
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			dsn, proxy := db.proxied(t)
			base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "5s", "-keys", freeKey + ":free"}, nil)
			client := &http.Client{Timeout: 10 * time.Second}
			probe := func() (int, string, time.Duration) {
				t.Helper()
				begun := time.Now()
				res, err := client.Get(base + "/readyz")
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(body), time.Since(begun)
			}
			if code, body, _ := probe(); code != 200 {
				t.Fatalf("/readyz before the pause: %d %s", code, body)
			}
			proxy.Pause()
			defer proxy.Restore()
			// The answer is a copy at most a second old: the first after
			// the pause may still be 200; every one must come within 1 s.
			deadline := time.Now().Add(5 * time.Second)
			for {
				code, body, took := probe()
				if took > time.Second {
					t.Fatalf("/readyz took %v with the database paused (%d %s), want an answer within 1 s", took, code, body)
				}
				if code == 503 {
					if !strings.Contains(body, `"database":"unreachable"`) {
						t.Fatalf("/readyz with the database paused: %s, want the database named unreachable", body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/readyz still %d %s 5 s into the pause, want 503", code, body)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// TestReadyzWithRedisPausedAnswersWithinASecond: a paused Redis (a black
// hole) keeps the server ready, failing open or closed, and each probe
// must say so within a second, Kubernetes' default probe timeout, with
// room for the network: 900 ms. The probe's own rate limit asks Redis;
// before, it waited the API limiter's 1 s store timeout on every probe
// until five had failed, so the probes timed out and the server was taken
// out of rotation for a fault that is meant to keep it serving.
func TestReadyzWithRedisPausedAnswersWithinASecond(t *testing.T) {
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			o, err := redislimit.ParseOptions(testenv.RedisURL(t))
			if err != nil {
				t.Fatal(err)
			}
			proxy := faultproxy.Start(t, o.Addr)
			prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
			base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", faultKey + ":enterprise:1000/10000",
				"-redis", proxy.Addr(), "-redis-prefix", prefix, "-ratelimit-fail", mode}, nil)
			client := &http.Client{Timeout: 10 * time.Second}
			probe := func() (int, time.Duration) {
				t.Helper()
				begun := time.Now()
				res, err := client.Get(base + "/readyz")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res.StatusCode, time.Since(begun)
			}
			if code, _ := probe(); code != 200 {
				t.Fatalf("/readyz before the pause: %d", code)
			}
			proxy.Pause()
			defer proxy.Restore()
			for i := range 6 {
				code, took := probe()
				if code != 200 || took > 900*time.Millisecond {
					t.Fatalf("probe %d with Redis paused: %d in %v, want 200 within 900 ms", i+1, code, took)
				}
			}
		})
	}
}

// TestReadyzWithABusyPoolStaysReady: every connection of the pool
// (-db-max-conns 2) is held by a request waiting on a locked table, so the
// probe's ping finds no free connection within its 500 ms; the database
// itself answers. The server is busy, not cut off: /readyz answers 200
// and says the pool is busy. Before, it answered 503 "database
// unreachable", taking a healthy replica out of rotation in a burst.
func TestReadyzWithABusyPoolStaysReady(t *testing.T) {
	dsn, direct, _ := proxiedPostgresDirect(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-max-conns", "2", "-db-timeout", "20s",
		"-keys", faultKey + ":enterprise:1000/10000"}, nil)
	if status, _, body := call(t, "GET", base+"/v1/pets", faultKey, "", ""); status != 200 {
		t.Fatalf("before the lock: %d %s", status, body)
	}
	ctx := context.Background()
	lock, err := direct.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, "LOCK TABLE pets IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 3)
	for i := range 3 {
		go func() {
			defer func() { done <- struct{}{} }()
			// Distinct reads: the same one would be asked once.
			callWithin(t, 30*time.Second, "GET", fmt.Sprintf("%s/v1/pets?limit=%d", base, i+2), faultKey, "")
		}()
	}
	var holder int
	if err := lock.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&holder); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "both connections wait on the lock", func() bool {
		var n int
		err := direct.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", holder).Scan(&n)
		return err == nil && n >= 2
	})
	// No probe came before this one: /readyz has no copy yet, so this
	// one pings afresh, with every connection of the pool held.
	begun := time.Now()
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"database":"busy: all 2 connections in use"`) || time.Since(begun) > time.Second {
		t.Fatalf("/readyz with every pool connection busy: %d %s in %v, want 200 naming the database busy within 1 s", res.StatusCode, body, time.Since(begun))
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-done
	}
}

// TestReadyzSeesADeadDatabaseBehindAFullPool: every connection of the
// pool (-db-max-conns 2) is held by a request waiting on a locked table,
// with a -db-timeout of 20 s, when the database's link is paused. /readyz
// must turn 503 naming the database unreachable within its bound (a copy
// at most a second old, a 500 ms ping), each answer within a second.
// Before, the ping waited for a pooled connection, found none and read
// "busy" (ready) until the requests gave up 20 s later, while the
// database answered nothing.
func TestReadyzSeesADeadDatabaseBehindAFullPool(t *testing.T) {
	dsn, direct, proxy := proxiedPostgresDirect(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-max-conns", "2", "-db-timeout", "20s",
		"-keys", faultKey + ":enterprise:1000/10000"}, nil)
	if status, _, body := call(t, "GET", base+"/v1/pets", faultKey, "", ""); status != 200 {
		t.Fatalf("before the lock: %d %s", status, body)
	}
	ctx := context.Background()
	lock, err := direct.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, "LOCK TABLE pets IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	for i := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			// Distinct reads: the same one would be asked once.
			callWithin(t, 30*time.Second, "GET", fmt.Sprintf("%s/v1/pets?limit=%d", base, i+2), faultKey, "")
		}()
	}
	// Cleanups run last first: the link is back before the lock goes, so
	// the requests end at once.
	defer func() {
		proxy.Restore()
		lock.Rollback()
		for range 2 {
			<-done
		}
	}()
	var holder int
	if err := lock.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&holder); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "both connections wait on the lock", func() bool {
		var n int
		err := direct.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", holder).Scan(&n)
		return err == nil && n >= 2
	})
	proxy.Pause()
	paused := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		begun := time.Now()
		res, err := client.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if took := time.Since(begun); took > time.Second {
			t.Fatalf("/readyz took %v behind a full pool with the database paused (%d %s), want an answer within 1 s", took, res.StatusCode, body)
		}
		if res.StatusCode == 503 {
			if !strings.Contains(string(body), `"database":"unreachable"`) {
				t.Fatalf("/readyz with the database paused behind a full pool: %s, want the database named unreachable", body)
			}
			break
		}
		// The copy's second, the ping's 500 ms and a margin for busy cores.
		if time.Since(paused) > 3*time.Second {
			t.Fatalf("/readyz still %d %s %v into the pause behind a full pool, want 503 within 3 s", res.StatusCode, body, time.Since(paused).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReadyzOverASlowLinkIsReady: over a link whose round trip is 300 ms,
// a database that answers every request is ready. /readyz pings over a
// connection opened at start and kept, so its 500 ms never has to hold a
// new connection's handshake, login and ping (four round trips and more),
// which read as unreachable before, at every probe.
func TestReadyzOverASlowLinkIsReady(t *testing.T) {
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			base, proxy := warmPooledServer(t, db.proxied, "4", "5s")
			proxy.SetLatency(150 * time.Millisecond)
			res, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(body), `"database":"ok"`) {
				t.Fatalf("/readyz over a 300 ms round trip: %d %s, want 200 with the database ok", res.StatusCode, body)
			}
		})
	}
}
