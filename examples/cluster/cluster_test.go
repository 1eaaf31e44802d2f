package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// builds compiles each program once per run: each link takes over a
// second, and the tests that start processes run in parallel.
var builds testenv.Builds

// TestMain removes the binaries builds compiled once the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	builds.Remove()
	os.Exit(code)
}

// random returns 12 random hex digits, so that each run's keys are new.
func random(t *testing.T) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs one API process and returns its base URL once it listens.
func start(t *testing.T, bin string, args ...string) string {
	u, _ := startProcess(t, bin, args...)
	return u
}

// startProcess is start, also returning the process, to read its output.
func startProcess(t *testing.T, bin string, args ...string) (string, *testenv.Process) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "PETSTORE_DB=", "PETSTORE_REDIS=", "PETSTORE_API_KEYS=")
	p := testenv.StartListening(t, cmd)
	return p.Addr + "/v1", p
}

// TestRedisDownIsQuiet runs a process whose Redis does not answer: it
// fails open, counting in memory, and go-redis does not print a line of
// its own per request (the limiter logs the failure once per interval
// instead).
func TestRedisDownIsQuiet(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	key := "psk_cluster_down_" + random(t)
	u, p := startProcess(t, builds.Build(t, "."), "-migrate", "-db", dsn, "-redis", closed, "-ratelimit-fail", "open", "-keys", key+":free")
	c, _ := client.New(u, key, client.WithMaxAttempts(1))
	for i := range 5 {
		if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
			t.Fatalf("request %d with Redis down, failing open: %v", i, err)
		}
	}
	// The headers are this process's count, as every response's must be.
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 60 || rl.Remaining != 55 {
		t.Fatalf("rate-limit headers with Redis down: %+v, %v; want the Free plan's 60, 55 left", rl, ok)
	}
	// Everything it wrote during those requests is read once it has
	// exited: only then does the absence of a line mean something. The
	// process's own log is on stderr too; go-redis's lines start with
	// "redis: ".
	p.Stop()
	for line := range strings.SplitSeq(p.Stderr.String(), "\n") {
		if strings.HasPrefix(line, "redis: ") {
			t.Fatalf("go-redis logged on its own:\n%s", p.Stderr.String())
		}
	}
}

// TestLogGoesToStderr: the log (here the limiter's warning that Redis is
// down) goes to stderr, as examples/server's does; stdout carries only
// the "listening on" line scripts wait for. Before, the log went to
// stdout, mixed with that line.
func TestLogGoesToStderr(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	key := "psk_cluster_log_" + random(t) + random(t)
	u, p := startProcess(t, builds.Build(t, "."), "-migrate", "-db", dsn, "-redis", closed, "-ratelimit-fail", "open", "-keys", key+":free")
	c, _ := client.New(u, key, client.WithMaxAttempts(1))
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("a request with Redis down, failing open: %v", err)
	}
	p.Stop()
	stdout, stderr := p.Stdout.String(), p.Stderr.String()
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "listening on ") {
		t.Errorf("stdout holds more than the \"listening on\" line:\n%s", stdout)
	}
	if !strings.Contains(stderr, "level=WARN") {
		t.Errorf("no warning on stderr with Redis down:\n%s", stderr)
	}
}

func TestTwoProcessesShareStateAndLimits(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresSchema(t)
	rd := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "cluster")
	bin := builds.Build(t, ".")

	writer := "psk_cluster_writer_" + random(t)
	free := "psk_cluster_free_" + random(t)
	common := []string{"-db", dsn, "-redis", rd, "-redis-prefix", prefix, "-keys", writer + ":pro," + free + ":free"}
	// Migrations run once, in the first process, before the second starts.
	a := start(t, bin, append(common, "-migrate")...)
	b := start(t, bin, common...)
	ctx := context.Background()

	t.Run("a pet written through one is read through the other", func(t *testing.T) {
		ca, _ := client.New(a, writer)
		cb, _ := client.New(b, writer)
		pet, err := ca.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusAvailable})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cb.GetPet(ctx, pet.ID)
		if err != nil || got != pet {
			t.Fatalf("GetPet through B = %+v, %v; want %+v", got, err, pet)
		}
		page, err := cb.ListPets(ctx, petstore.PetFilter{Status: petstore.StatusAvailable})
		if err != nil || len(page.Pets) != 1 || page.Pets[0] != pet {
			t.Fatalf("ListPets through B = %+v, %v", page, err)
		}
	})

	t.Run("a free key's 60 a minute are shared, not doubled", func(t *testing.T) {
		// No retries and no waits: a refused call returns its 429 (or,
		// while its client holds back after one, that 429, unsent).
		clients := []*client.Client{}
		for _, u := range []string{a, b} {
			c, _ := client.New(u, free, client.WithMaxAttempts(1), client.WithMaxWait(0))
			clients = append(clients, c)
		}
		admitted := [2]int{}
		for i := range 120 {
			_, err := clients[i%2].ListPets(ctx, petstore.PetFilter{Limit: 1})
			var perr *petstore.Error
			switch {
			case err == nil:
				admitted[i%2]++
			case errors.As(err, &perr) && (perr.Code == petstore.CodeRateLimited || perr.Code == petstore.CodeAPIKeyBanned):
				// Refused; after 30 refusals the key is banned, on both
				// processes alike.
			default:
				t.Fatalf("request %d: %v", i, err)
			}
		}
		if total := admitted[0] + admitted[1]; total != 60 {
			t.Fatalf("admitted %d (A %d, B %d) of 120 alternating requests, want exactly 60 in all", total, admitted[0], admitted[1])
		}
		if admitted[0] == 0 || admitted[1] == 0 {
			t.Fatalf("admitted A %d, B %d: both processes should have served", admitted[0], admitted[1])
		}
		for i, c := range clients {
			rl, ok := c.RateLimit()
			if !ok || rl.Limit != 60 || rl.Remaining != 0 {
				t.Fatalf("process %d reports %+v (%v), want limit 60 and none remaining", i, rl, ok)
			}
		}
	})
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"ok", []string{"-db", "postgres://x/y", "-redis", "127.0.0.1:6379", "-keys", "psk_Alpha3kW9xQ2mT7vB4nZrE:free,psk_Bravo8jR2pZ6cY1wN5xHq4:enterprise:5/50"}, ""},
		{"weak key", []string{"-db", "d", "-redis", "r", "-keys", "a:free"}, "too guessable"},
		{"repeated key", []string{"-db", "d", "-redis", "r", "-keys", "psk_Alpha3kW9xQ2mT7vB4nZrE:free,psk_Alpha3kW9xQ2mT7vB4nZrE:pro"}, "same secret"},
		{"no db", []string{"-redis", "r:1"}, "-db is required"},
		{"no redis", []string{"-db", "postgres://x/y"}, "-redis is required"},
		{"bad plan", []string{"-db", "d", "-redis", "r", "-keys", "a:gold"}, "unknown plan"},
		{"bad limits", []string{"-db", "d", "-redis", "r", "-keys", "a:enterprise:50/5"}, "enterprise limits"},
		{"bad fail mode", []string{"-db", "d", "-redis", "r", "-ratelimit-fail", "maybe"}, "open or closed"},
		{"bad db timeout", []string{"-db", "d", "-redis", "r", "-db-timeout", "0s"}, "-db-timeout: want a positive duration"},
		// Each process would keep a database of its own.
		{"memory db", []string{"-db", "memory", "-redis", "r:1"}, "-db must be postgres://… or mysql://…"},
		{"sqlite db", []string{"-db", "sqlite:pets.db", "-redis", "r:1"}, "-db must be postgres://… or mysql://…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig(tt.args, env)
			if tt.wantErr == "" {
				if err != nil || len(cfg.keys) != 2 || cfg.keys[1].Limits.PerMinute != 5 || !cfg.failOpen {
					t.Fatalf("parseConfig = %+v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRevokeWithTheDatabaseAloneReachesEveryProcess: an operator who runs
// examples/server's keys subcommand with the cluster's PostgreSQL -db but
// without -redis is told the running servers heard of it at once
// (LISTEN/NOTIFY); the cluster's processes then refuse the key within the
// 1 s bound too, as examples/server's started with -redis do.
func TestRevokeWithTheDatabaseAloneReachesEveryProcess(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	rd := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "cluster")
	bin := builds.Build(t, ".")
	server := builds.Build(t, "../server")

	key := "psk_cluster_revoked_" + random(t)
	u := start(t, bin, "-migrate", "-db", dsn, "-redis", rd, "-redis-prefix", prefix, "-keys", key+":pro")
	c, _ := client.New(u, key, client.WithMaxAttempts(1))
	ctx := context.Background()
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatalf("before the revoke: %v", err) // the key is now cached
	}

	keys := keysCommand(t, server, dsn)
	id := onlyKeyID(t, keys)
	if out := keys("revoke", id); !strings.Contains(out, "told at once") {
		t.Fatalf("revoke does not say the servers were told:\n%s", out)
	}
	revoked := time.Now()
	deadline := revoked.Add(time.Second)
	// The bound is on when a request is sent: one sent just before it
	// may still be answered with the old key just after.
	for {
		sent := time.Now()
		_, err := c.ListPets(ctx, petstore.PetFilter{})
		if petstore.ErrorCode(err) == petstore.CodeUnauthorized {
			t.Logf("401 %v after the revoke", sent.Sub(revoked).Round(time.Millisecond))
			return
		}
		if sent.After(deadline) {
			t.Fatalf("a request sent %v after a revoke the command said every server heard: %v, want 401", sent.Sub(revoked).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRevokeOnTheDatabaseFeedReachesAProcessAfterItsLinkWasCut: a process
// hears key changes on Redis and on PostgreSQL's feed, where a keys
// command run with -db alone publishes them. While the process's link to
// PostgreSQL is cut, such a revoke is missed, yet once the link is back
// the key is refused: the process forgets its cached keys when the
// database's feed is lost, as when Redis's is, and does not trust them
// longer than keycache.DefaultTTL until it listens again.
func TestRevokeOnTheDatabaseFeedReachesAProcessAfterItsLinkWasCut(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresSchema(t)
	proxy, proxied := faultproxy.StartFor(t, dsn)
	rd := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "cluster")
	bin := builds.Build(t, ".")
	server := builds.Build(t, "../server")

	key := "psk_cluster_cut_" + random(t) + random(t)
	u := start(t, bin, "-migrate", "-db", proxied, "-redis", rd, "-redis-prefix", prefix, "-keys", key+":pro")
	get := func() int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u+"/pets", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("before the cut: %d", code) // the key is now cached
	}

	keys := keysCommand(t, server, dsn)
	id := onlyKeyID(t, keys)

	proxy.Cut()
	if out := keys("revoke", id); !strings.Contains(out, "told at once") {
		t.Fatalf("revoke does not say the servers were told:\n%s", out)
	}
	revoked := time.Now()
	time.Sleep(time.Second) // the documented bound passes while the link is still cut
	proxy.Restore()
	// Once the process reaches the database again it answers; the bound
	// has passed, so never with the revoked key accepted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		switch code := get(); code {
		case http.StatusUnauthorized:
			t.Logf("401 %v after the revoke", time.Since(revoked).Round(time.Millisecond))
			return
		case http.StatusServiceUnavailable, http.StatusInternalServerError:
			if time.Now().After(deadline) {
				t.Fatalf("still %d 10 s after the link was restored", code)
			}
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("%d %v after the revoke, its notice missed while the link was cut, want 401", code, time.Since(revoked).Round(time.Millisecond))
		}
	}
}

// keysCommand runs examples/server's keys subcommand (the binary server)
// on the database dsn, without the PETSTORE_ settings of the test's own
// environment but for PETSTORE_TEST_, and returns its output.
func keysCommand(t *testing.T, server, dsn string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(server, append([]string{"-db", dsn, "-migrate=false", "keys"}, args...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PETSTORE_") || strings.HasPrefix(kv, "PETSTORE_TEST_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// onlyKeyID returns the id of the one key "keys list" lists.
func onlyKeyID(t *testing.T, keys func(args ...string) string) string {
	t.Helper()
	list := strings.Split(strings.TrimSpace(keys("list")), "\n")
	if len(list) != 2 {
		t.Fatalf("keys list printed %q, want one key", list)
	}
	return strings.Fields(list[1])[0]
}

// TestPausedDatabaseIs503: with the database's link paused (a black
// hole), a request is answered 503 unavailable with Retry-After once
// -db-timeout (5 s by default) has passed, as examples/server's are, so
// the client and the load balancer can go elsewhere. Before, it hung for
// as long as the pause, holding a pool connection.
func TestPausedDatabaseIs503(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresSchema(t)
	proxy, proxied := faultproxy.StartFor(t, dsn)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "cluster")
	key := "psk_cluster_pause_" + random(t) + random(t)
	u := start(t, builds.Build(t, "."), "-migrate", "-db", proxied, "-redis", testenv.RedisURL(t), "-redis-prefix", prefix, "-keys", key+":pro")
	get := func(path string) (*http.Response, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		begun := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v after %v", path, err, time.Since(begun).Round(time.Millisecond))
		}
		res.Body.Close()
		return res, time.Since(begun)
	}
	if res, _ := get("/pets"); res.StatusCode != http.StatusOK {
		t.Fatalf("before the pause: %d", res.StatusCode) // the key is now cached
	}
	proxy.Pause()
	defer proxy.Restore()
	res, took := get("/pets?limit=3")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || took > 7*time.Second {
		t.Fatalf("with the database paused: %d in %v, Retry-After %q; want 503 with Retry-After within 5 s and a margin",
			res.StatusCode, took.Round(time.Millisecond), res.Header.Get("Retry-After"))
	}
}
