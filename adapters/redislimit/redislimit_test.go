package redislimit_test

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	petstore "github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/ratelimit/ratelimittest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	testenv.RedisURL(t)
	ratelimittest.Run(t, func(t testing.TB) ratelimit.Store {
		c := testenv.RedisClient(t)
		return redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())
	})
}

// takeOnly hides the Store's Lease, so that a Limiter calls Take for
// every request, as it does over a store that does not lease.
type takeOnly struct{ ratelimit.Store }

// TestTakeStore runs the suite through Take, the per-request script,
// which TestStore does not reach: a Limiter over a Leaser only leases.
func TestTakeStore(t *testing.T) {
	t.Parallel()
	testenv.RedisURL(t)
	ratelimittest.Run(t, func(t testing.TB) ratelimit.Store {
		c := testenv.RedisClient(t)
		return takeOnly{redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())}
	})
}

func TestKeysHaveTTL(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, c, "rl")
	// The ban poll reads the clock too, from its own goroutine.
	clk := testenv.NewClock(time.Now())
	lim := ratelimit.New(redislimit.New(c, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clk.Now})
	for i := range 100 { // admissions, strikes and a ban
		if i == 61 {
			clk.Advance(time.Second) // past the strike grace
		}
		if _, err := lim.Decide(context.Background(), "key:ttl", ratelimittest.Free); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := c.Keys(context.Background(), prefix+"key:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys = %v, %v; want exactly one hash", keys, err)
	}
	ttl := c.PTTL(context.Background(), keys[0]).Val()
	// The ban level is remembered for 24 h after the 15 min ban.
	if ttl <= 24*time.Hour || ttl > 24*time.Hour+15*time.Minute {
		t.Fatalf("TTL = %v, want just under 24 h 15 min", ttl)
	}
}

// TestTwoProcessesShareOneRedis runs two limiters, each with its own client,
// against one subject: together they admit exactly the plan's minute.
func TestTwoProcessesShareOneRedis(t *testing.T) {
	t.Parallel()
	a, b := testenv.RedisClient(t), testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, a, "rl")
	clock := func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	limiters := []*ratelimit.Limiter{
		ratelimit.New(redislimit.New(a, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clock, StoreTimeout: 5 * time.Second}),
		ratelimit.New(redislimit.New(b, prefix, redislimit.CallerClock()), ratelimit.Config{Clock: clock, StoreTimeout: 5 * time.Second}),
	}
	ratelimittest.CheckSharedQuota(t, limiters...)
}

// TestFewRoundTripsPerDecision checks what leasing is for: a busy key is
// decided in memory, with one round trip per share, and a share grows
// with the key's rate, so 20,000 decisions of a key whose quota is far
// away cost a few dozen round trips (ban polls included), not 20,000.
func TestFewRoundTripsPerDecision(t *testing.T) {
	var count testenv.CommandCounter
	c := testenv.RedisClient(t)
	c.AddHook(&count)
	lim := ratelimit.New(redislimit.New(c, testenv.RedisPrefix(t, c, "rl")), ratelimit.Config{})
	t.Cleanup(func() { _ = lim.Close(context.Background()) })
	ctx := context.Background()
	big := petstore.Limits{PerMinute: 100_000_000, PerDay: 1_000_000_000}
	before := count.Count()
	for range 20_000 {
		if d, err := lim.Decide(ctx, "key:busy", big); err != nil || !d.Allowed || d.Degraded {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	got := count.Count() - before
	t.Logf("20,000 decisions: %d commands", got)
	if got > 60 {
		t.Fatalf("20,000 decisions sent %d commands, want at most 60", got)
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// privateRedis starts a throwaway redis-server listening only on a Unix
// socket in the test's temporary directory: no port another process could
// take between choosing it and redis-server binding it, and no other server
// answering in its place. The test may kill it; the shared server is never
// touched.
func privateRedis(t *testing.T, args ...string) (addr string, kill func()) {
	t.Helper()
	testenv.RedisURL(t) // the same opt-in as the other Redis tests
	bin := testenv.Program(t, "redis-server", "redis-server")
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command(bin, append([]string{"--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"}, args...)...)
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(exited) }()
	var once sync.Once
	kill = func() { once.Do(func() { _ = cmd.Process.Kill(); <-exited }) }
	t.Cleanup(kill)
	// Its log says it is ready ("Ready to accept connections" or, on a
	// socket only, "ready to accept connections at"); if it exits instead,
	// WaitFor fails with that log.
	out.WaitFor(t, "to accept connections")
	return "unix://" + sock, kill
}

func TestScriptFlushedIsReloaded(t *testing.T) {
	t.Parallel()
	addr, _ := privateRedis(t)
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(addr, "unix://")})
	defer c.Close()
	lim := ratelimit.New(redislimit.New(c, "t:"), ratelimit.Config{})
	ctx := context.Background()
	for i := range 3 {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := lim.Decide(ctx, "key:flush", ratelimittest.Free)
		if err != nil || !d.Allowed || d.Binding.Remaining != int64(59-i) {
			t.Fatalf("after SCRIPT FLUSH: %+v, %v; want admitted with %d remaining", d, err, 59-i)
		}
	}
}

func TestRedisDown(t *testing.T) {
	tests := []struct {
		name     string
		kill     bool // a private server, up first then killed; else a closed port
		failOpen bool
	}{
		{"killed server, fail open", true, true},
		{"killed server, fail closed", true, false},
		{"closed port, fail open", false, true},
		{"closed port, fail closed", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, kill := "127.0.0.1:"+strconv.Itoa(freePort(t)), func() {}
			if tc.kill {
				addr, kill = privateRedis(t)
			}
			o, err := redislimit.ParseOptions(addr)
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(o)
			defer c.Close()
			var logs testenv.Buffer // the ban poll logs too
			lim := ratelimit.New(redislimit.New(c, "t:"), ratelimit.Config{
				FailClosed: !tc.failOpen, StoreTimeout: 200 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			ctx := context.Background()
			if tc.kill {
				// Up first, then killed under the limiter's pooled connection.
				if d, err := lim.Decide(ctx, "key:down", ratelimittest.Free); err != nil || !d.Allowed || d.Degraded {
					t.Fatalf("while up: %+v, %v", d, err)
				}
				kill()
			}
			start := time.Now()
			for range 5 {
				d, err := lim.Decide(ctx, "key:down", ratelimittest.Free)
				if tc.failOpen {
					if err != nil || !d.Allowed || !d.Degraded {
						t.Fatalf("fail open: %+v, %v; want admitted and degraded", d, err)
					}
				} else if got := petstore.ErrorCode(err); got != petstore.CodeUnavailable {
					t.Fatalf("fail closed: error %v (code %q), want unavailable", err, got)
				}
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("5 decisions took %v with Redis down: the timeout does not bound them", took)
			}
			// The ban poll's failures count too.
			if !lim.Degraded() || lim.Failures() < 5 {
				t.Fatalf("Degraded = %v, Failures = %d; want true, at least 5", lim.Degraded(), lim.Failures())
			}
			if n := strings.Count(logs.String(), "rate limit store failed"); n != 1 {
				t.Fatalf("logged %d failures, want 1 per interval:\n%s", n, logs.String())
			}
			if strings.Contains(logs.String(), "key:down") {
				t.Fatal("the log names the subject")
			}
		})
	}
}

func TestParseOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		addr    string
		db      int
		wantErr bool
	}{
		{in: "127.0.0.1:6379", addr: "127.0.0.1:6379"},
		{in: "localhost:6380", addr: "localhost:6380"},
		{in: "[::1]:6379", addr: "[::1]:6379"},
		{in: "redis://127.0.0.1:6379/2", addr: "127.0.0.1:6379", db: 2},
		{in: "redis://:secret@127.0.0.1:6379/0", addr: "127.0.0.1:6379"},
		{in: "", wantErr: true},
		{in: "127.0.0.1", wantErr: true},
		{in: "127.0.0.1:notaport", wantErr: true},
		{in: "127.0.0.1:70000", wantErr: true},
		{in: "http://127.0.0.1:6379", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			o, err := redislimit.ParseOptions(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseOptions(%q) = %+v, want an error", tc.in, o)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Addr != tc.addr || o.DB != tc.db || !o.ContextTimeoutEnabled {
				t.Fatalf("got addr %q db %d ctx timeouts %v; want %q %d true", o.Addr, o.DB, o.ContextTimeoutEnabled, tc.addr, tc.db)
			}
		})
	}
}

func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"127.0.0.1:6379", "redis://u:p@h:1/3", "rediss://h", "[::1]:0", ":", "redis://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := redislimit.ParseOptions(s)
		if err == nil && (o == nil || o.Addr == "" || !o.ContextTimeoutEnabled) {
			t.Fatalf("ParseOptions(%q) = %+v without error", s, o)
		}
	})
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	testenv.RedisURL(t)
	ratelimittest.RunAdmin(t, func(t testing.TB) ratelimit.Store {
		c := testenv.RedisClient(t)
		return redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())
	})
}

// TestTakeBoundsAClockAhead: Take, like Lease, counts a window or ban end
// written by a clock that ran ahead as its length at most.
func TestTakeBoundsAClockAhead(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClient(t)
	s := redislimit.New(c, testenv.RedisPrefix(t, c, "rl"), redislimit.CallerClock())
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ahead := now.Add(time.Hour)
	take := func(subject string, at time.Time) ratelimit.Result {
		t.Helper()
		res, err := s.Take(ctx, ratelimit.Request{Subject: subject, Rates: ratelimit.Rates(ratelimittest.Free), Now: at, Ban: ratelimit.BanPolicy{Grace: -1}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for range ratelimittest.Free.PerMinute {
		take("key:full", ahead)
	}
	if res := take("key:full", now); res.Allowed || res.Windows[0].Reset.Sub(now) > time.Minute {
		t.Fatalf("a minute filled an hour ahead: allowed %v, resets in %v; want refused for a minute at most", res.Allowed, res.Windows[0].Reset.Sub(now))
	}
	for res := take("key:banned", ahead); !res.Banned; res = take("key:banned", ahead) {
	}
	if res := take("key:banned", now); !res.Banned || res.BanEnd.Sub(now) > 15*time.Minute {
		t.Fatalf("a 15 min ban started an hour ahead: banned %v until %v; want 15 min at most", res.Banned, res.BanEnd.Sub(now))
	}
	// And it ends then: the end it was counted as holds for later calls.
	if res := take("key:banned", now.Add(15*time.Minute)); res.Banned {
		t.Fatalf("a 15 min ban started an hour ahead is still in force 15 min later, until %v", res.BanEnd)
	}
}
