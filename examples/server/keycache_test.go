package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// staleness is the documented bound: a key change made by one process is
// in effect in every other process within it.
const staleness = time.Second

// TestKeyChangesReachEveryProcess runs two server processes on one
// PostgreSQL database, caching keys, and changes a key with the keys
// subcommand in a third: every request made after the bound sees the new
// plan, then the revocation, on both servers. Their change feed is
// PostgreSQL's LISTEN/NOTIFY, or Redis pub/sub with -redis.
func TestKeyChangesReachEveryProcess(t *testing.T) {
	t.Parallel()
	testenv.PostgresDSN(t)
	bin := builds.Build(t, ".")
	for _, tc := range []struct {
		name  string
		redis bool
		// cmdWithoutRedis runs the keys commands with -db alone, as an
		// operator who forgot -redis would (issue 26): the servers hear
		// the change on PostgreSQL's feed too.
		cmdWithoutRedis bool
	}{{"PostgreSQL", false, false}, {"Redis", true, false}, {"RedisServersCommandWithoutRedis", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			common := []string{"-db", testenv.PostgresSchema(t)}
			cmdArgs := common
			if tc.redis {
				common = append(common, "-redis", testenv.RedisURL(t), "-redis-prefix", testenv.RedisPrefix(t, testenv.RedisClient(t), "server"))
			}
			if !tc.cmdWithoutRedis {
				cmdArgs = common
			}
			// The first command migrates the fresh schema; the servers
			// then need not.
			out := runServerCmd(t, bin, append(cmdArgs, "keys", "create", "-plan", "pro")...)
			m := regexp.MustCompile(`(?m)^id:\s+(\S+)$[\s\S]*^key:\s+(\S+)$`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("keys create printed:\n%s", out)
			}
			id, secret := m[1], m[2]
			var servers []string
			for range 2 {
				cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-migrate=false"}, common...)...)
				cmd.Env = serverEnv()
				servers = append(servers, testenv.StartListening(t, cmd).Addr+"/pets")
			}
			limit := func(res *http.Response) string {
				if res.StatusCode != http.StatusOK {
					return res.Status
				}
				return res.Header.Get("X-RateLimit-Limit")
			}
			// Each server now holds the key in its cache.
			for _, u := range servers {
				if got := limit(get(t, u, secret)); got != "300" {
					t.Fatalf("%s before any change: %s, want the Pro plan's 300 a minute", u, got)
				}
			}

			if out := runServerCmd(t, bin, append(cmdArgs, "keys", "set-plan", id, "business")...); !strings.Contains(out, "told at once") {
				t.Fatalf("set-plan does not say the servers were told:\n%s", out)
			}
			holdsAfterBound(t, servers, secret, "the Business plan's 1000 a minute",
				func(res *http.Response) bool { return limit(res) == "1000" })

			runServerCmd(t, bin, append(cmdArgs, "keys", "revoke", id)...)
			holdsAfterBound(t, servers, secret, "401",
				func(res *http.Response) bool { return res.StatusCode == http.StatusUnauthorized })
		})
	}
}

// holdsAfterBound asks each server, until ok holds or the staleness bound
// (counted from now, just after the change) has passed, and then fails t
// unless ok holds for a request made after the bound.
func holdsAfterBound(t *testing.T, servers []string, secret, want string, ok func(*http.Response) bool) {
	t.Helper()
	changed := time.Now()
	deadline := changed.Add(staleness)
	for _, u := range servers {
		for !ok(get(t, u, secret)) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: %s after %v", u, want, time.Since(changed).Round(time.Millisecond))
	}
	time.Sleep(time.Until(deadline)) // the bound itself, not a synchronisation
	for _, u := range servers {
		if res := get(t, u, secret); !ok(res) {
			t.Fatalf("%s: %s (X-RateLimit-Limit %q) more than %v after the change, want %s",
				u, res.Status, res.Header.Get("X-RateLimit-Limit"), staleness, want)
		}
	}
}

// runServerCmd runs the server binary to completion (a keys subcommand)
// and returns what it printed.
func runServerCmd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = serverEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// serverEnv is the test's environment without the server's own
// variables, so that only the flags configure it.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PETSTORE_") || strings.HasPrefix(kv, "PETSTORE_TEST_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestKeysSubcommandSaysWhenServersWereNotTold: with Redis unreachable
// the revoke is stored, but the subcommand fails and says what that means.
func TestKeysSubcommandSaysWhenServersWereNotTold(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/keys.db"
	var out strings.Builder
	if err := run(context.Background(), []string{"-db", db, "keys", "create"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^id:\s+(\S+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("keys create printed:\n%s", out.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	out.Reset()
	err = run(context.Background(), []string{"-db", db, "-redis", closed, "keys", "revoke", m[1]}, func(string) string { return "" }, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "running servers were not told") {
		t.Fatalf("revoke with Redis down: %v, want an error saying servers were not told", err)
	}
	if !strings.Contains(out.String(), "revoked "+m[1]) {
		t.Fatalf("revoke printed %q, want it to say the key is revoked", out.String())
	}
}

// TestRevokeReachesAServerWhoseFeedIsPaused: a server whose link to its
// change feed is paused (a black hole) never hears the revoke, yet
// refuses the key within the staleness bound: it notices the quiet feed
// within a second, forgets its cached keys, and asks the database again.
// The database is MySQL, so that Redis is the server's only feed.
func TestRevokeReachesAServerWhoseFeedIsPaused(t *testing.T) {
	db := testenv.MySQLDatabase(t)
	o, err := redislimit.ParseOptions(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	direct := []string{"-db", db, "-redis", testenv.RedisURL(t), "-redis-prefix", prefix}
	keys := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), append(direct, append([]string{"keys"}, args...)...), func(string) string { return "" }, &out, io.Discard); err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	m := regexp.MustCompile(`(?m)^id:\s+(\S+)$[\s\S]*^key:\s+(\S+)$`).FindStringSubmatch(keys("create", "-plan", "pro"))
	if m == nil {
		t.Fatal("keys create printed no id and key")
	}
	id, secret := m[1], m[2]

	proxy := faultproxy.Start(t, o.Addr)
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-migrate=false",
		"-redis", proxy.Addr(), "-redis-prefix", prefix}, nil)
	pets := srv.base + "/v1/pets"
	if res := get(t, pets, secret); res.StatusCode != http.StatusOK {
		t.Fatalf("before the pause: %s", res.Status) // the key is now cached
	}

	proxy.Pause()
	if out := keys("revoke", id); !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke printed %q", out)
	}
	// Requests wait for the paused Redis (the limiter's 1 s timeout), so
	// they are sent apart from each other's answers: one every 40 ms,
	// for half a bound past the bound. That is 38 requests, fewer than
	// the 60 a minute an address may send with a wrong key (the Free
	// plan's figures, docs/rate-limits.md): on a loaded machine the
	// revoke command can outlast the server's noticing the pause, every
	// request is then a wrong key, and more of them would rightly be
	// refused 429 for the address instead of 401 for the key.
	type answer struct {
		sent time.Duration // after the revoke
		code int
	}
	revoked := time.Now()
	answers := make(chan answer)
	var sent int
	for at := time.Duration(0); at < staleness*3/2; at += 40 * time.Millisecond {
		time.Sleep(time.Until(revoked.Add(at)))
		sent++
		go func() {
			since := time.Since(revoked)
			req, _ := http.NewRequest("GET", pets, nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{since, 0}
				return
			}
			res.Body.Close()
			answers <- answer{since, res.StatusCode}
		}()
	}
	first := time.Duration(-1)
	for range sent {
		a := <-answers
		if a.code == http.StatusUnauthorized && (first < 0 || a.sent < first) {
			first = a.sent
		}
		if a.sent > staleness && a.code != http.StatusUnauthorized {
			t.Errorf("a request sent %v after the revoke answered %d, want 401 past the %v bound", a.sent.Round(time.Millisecond), a.code, staleness)
		}
	}
	t.Logf("401 from a request sent %v after the revoke", first.Round(time.Millisecond))
}

// TestRevokeOnTheDatabaseFeedReachesARedisServerAfterItsLinkWasCut: a
// server started with -redis on PostgreSQL also hears key changes on the
// database's own feed, where a keys command run with -db alone publishes
// them. While the server's link to PostgreSQL is cut, such a revoke is
// missed, yet once the link is back the key is refused: the server
// forgets its cached keys when the database's feed is lost, as when
// Redis's is, and does not trust them longer than keycache.DefaultTTL
// until it listens again.
func TestRevokeOnTheDatabaseFeedReachesARedisServerAfterItsLinkWasCut(t *testing.T) {
	direct := testenv.PostgresSchema(t)
	proxy, proxied := faultproxy.StartFor(t, direct)
	keys := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), append([]string{"-db", direct, "keys"}, args...), func(string) string { return "" }, &out, io.Discard); err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	m := regexp.MustCompile(`(?m)^id:\s+(\S+)$[\s\S]*^key:\s+(\S+)$`).FindStringSubmatch(keys("create", "-plan", "pro"))
	if m == nil {
		t.Fatal("keys create printed no id and key")
	}
	id, secret := m[1], m[2]
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", proxied, "-migrate=false", "-db-timeout", "2s",
		"-redis", testenv.RedisURL(t), "-redis-prefix", prefix}, nil)
	pets := srv.base + "/v1/pets"
	if res := get(t, pets, secret); res.StatusCode != http.StatusOK {
		t.Fatalf("before the cut: %s", res.Status) // the key is now cached
	}

	proxy.Cut()
	if out := keys("revoke", id); !strings.Contains(out, "told at once") {
		t.Fatalf("revoke printed %q", out)
	}
	revoked := time.Now()
	time.Sleep(staleness) // the bound passes while the link is still cut
	proxy.Restore()
	// Once the server reaches the database again, it answers; the bound
	// has passed, so never with the revoked key accepted.
	until(t, 10*time.Second, "the server answers other than 503 once the database is back", func() bool {
		res := get(t, pets, secret)
		switch res.StatusCode {
		case http.StatusServiceUnavailable:
			return false
		case http.StatusUnauthorized:
			return true
		}
		t.Fatalf("%s %v after the revoke, its notice missed while the link was cut, want 401", res.Status, time.Since(revoked).Round(time.Millisecond))
		return true
	})
}
