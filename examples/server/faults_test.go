package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// Each test here puts a real TCP proxy between the example server and
// PostgreSQL and cuts, pauses or slows it (issue 12). Polling loops are
// bounded; they wait for the outcome they name, not for time.

// faultKey is an Enterprise key with room for every request a test sends.
const faultKey = "psk_fault_Vt8xQ2nL5mRz9Kc4Wb7Y"

// proxiedPostgres returns a fresh schema's DSN whose host is a fault proxy
// in front of PETSTORE_TEST_POSTGRES, and the proxy.
func proxiedPostgres(t *testing.T) (string, *faultproxy.Proxy) {
	dsn, _, p := proxiedPostgresDirect(t)
	return dsn, p
}

// proxiedDatabases are the SQL servers the fault tests of every database
// run on: each gives a DSN through a fault proxy of its own. feedConns is
// how many connections the server holds beside its pool: on PostgreSQL,
// the change feed's listener and its publisher.
var proxiedDatabases = []struct {
	name      string
	proxied   func(t *testing.T) (string, *faultproxy.Proxy)
	feedConns int
}{
	{"postgres", proxiedPostgres, 2},
	{"mariadb", func(t *testing.T) (string, *faultproxy.Proxy) {
		p, dsn := faultproxy.StartFor(t, testenv.MySQLDatabase(t))
		return dsn, p
	}, 0},
}

// proxiedPostgresDirect is proxiedPostgres plus a direct connection to
// the same schema, which the proxy's faults do not touch.
func proxiedPostgresDirect(t *testing.T) (string, *bun.DB, *faultproxy.Proxy) {
	t.Helper()
	direct := testenv.PostgresSchema(t)
	p, proxied := faultproxy.StartFor(t, direct)
	db, err := bunopen.Open(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return proxied, db, p
}

// until polls f every 20 ms until it reports true, failing after limit.
// pauseReleasing pauses the server's link, then ends the session of the
// direct connection holder that holds a lock (conn is its connection),
// which releases the lock: from then on nothing reaches the server, the
// grant of the lock included. It returns when the pause began; the link
// is restored when the test ends.
func pauseReleasing(t *testing.T, proxy *faultproxy.Proxy, conn bun.Conn, holder *bun.DB) time.Time {
	t.Helper()
	begun := time.Now()
	proxy.Pause()
	t.Cleanup(proxy.Restore)
	_ = conn.Close()
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	return begun
}

func until(t *testing.T, limit time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDatabaseOutageIsNotAnInvalidKey (item 1): while the database is
// cut, a valid key's requests are 503 with Retry-After, never 401, never
// charged to the address's budget of wrong keys and never struck; once
// the database is back the key is served, its own budget untouched by the
// refused requests.
func TestDatabaseOutageIsNotAnInvalidKey(t *testing.T) {
	dsn, proxy := proxiedPostgres(t)
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "2s",
		"-keys", faultKey + ":enterprise:100/1000"}, nil)
	base := srv.base
	if status, _, body := call(t, "GET", base+"/v1/pets", faultKey, "", ""); status != 200 {
		t.Fatalf("before the outage: %d %s", status, body)
	}

	proxy.Cut()
	// The feed goes with the database, so the key cache stops trusting its
	// entries within a second; from then on the key must be looked up.
	until(t, 10*time.Second, "a request needing the database answers 503", func() bool {
		status, _, _ := call(t, "GET", base+"/v1/pets", faultKey, "", "")
		return status == 503
	})
	// Every 503 carries the rate-limit headers: the key's, when its cached
	// entry was still trusted and the store failed the request, else, the
	// key not checked, its address's budget of wrong keys, none spent.
	looked := 0
	for i := 0; i < 40 || looked == 0; i++ {
		status, h, body := call(t, "GET", base+"/v1/pets", faultKey, "", "")
		if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, `"unavailable"`) {
			t.Fatalf("during the outage: %d Retry-After=%q %s; want 503 unavailable with Retry-After", status, h.Get("Retry-After"), body)
		}
		lim, rem, reset := h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset")
		if lim == "60" && rem == "60" && reset != "" {
			looked++
		} else if lim != "100" || rem == "" || reset == "" {
			t.Fatalf("503 %d during the outage: X-RateLimit-Limit %q, -Remaining %q, -Reset %q; want the key's (100) or the address's untouched budget (60 of 60)", i+1, lim, rem, reset)
		}
		if i == 400 {
			t.Fatal("no key lookup failed in 400 requests: the key cache still trusts its entry")
		}
	}

	proxy.Restore()
	until(t, 10*time.Second, "the key is served again", func() bool {
		status, _, _ := call(t, "GET", base+"/v1/pets", faultKey, "", "")
		return status == 200
	})
	status, h, _ := call(t, "GET", base+"/v1/pets", faultKey, "", "")
	if status != 200 {
		t.Fatalf("after the outage: %d", status)
	}
	// 100 a minute: the two 200s before and after are charged, and at most
	// the polls that reached the limiter; none of the 40 refused ones.
	if rem, _ := strconv.Atoi(h.Get("X-RateLimit-Remaining")); rem < 90 {
		t.Fatalf("X-RateLimit-Remaining %d after the outage: the refused requests were charged", rem)
	}
	// The address's budget of wrong keys was not touched either.
	status, h, _ = call(t, "GET", base+"/v1/pets", "psk_wrong_key_after_outage_000", "", "")
	if status != 401 || h.Get("X-RateLimit-Remaining") != "59" {
		t.Fatalf("a wrong key after the outage: %d, X-RateLimit-Remaining %s; want 401 with 59 left", status, h.Get("X-RateLimit-Remaining"))
	}

	// The outage is in the log with its cause, once for the 40-odd 503s
	// (item 9: one rate-limited line per cause, not one per request). Only
	// the request path's lines count: the domain engine's background
	// refresh may fail in the outage too, and says so in its own line,
	// whose error text quotes the same cause.
	srv.stop()
	var lines []string
	for _, l := range strings.Split(srv.logs.String(), "\n") {
		if strings.Contains(l, `msg="the database is unavailable`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "error=") || !strings.Contains(lines[0], "request_id=") {
		t.Fatalf("%d log lines for the database outage, want 1 with its cause:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestPausedDatabaseIsBounded (item 3): a black-holed database makes
// every request that reaches it (pets and orders, reads and creates) 503
// after -db-timeout instead of hanging, /readyz names the
// database while /healthz stays 200, and both recover with it.
func TestPausedDatabaseIsBounded(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "500ms", "-start-timeout", "30s",
		"-keys", faultKey + ":enterprise:1000/10000"}, nil)
	if status, _, body := call(t, "GET", base+"/readyz", "", "", ""); status != 200 {
		t.Fatalf("readyz before: %d %s", status, body)
	}
	proxy.Pause()
	// A create always needs the database.
	status, h, body := call(t, "POST", base+"/v1/pets", faultKey, "", `{"name":"Held","categoryId":1}`)
	if status != 503 || h.Get("Retry-After") == "" {
		t.Fatalf("create against a paused database: %d Retry-After=%q %s", status, h.Get("Retry-After"), body)
	}
	// Every operation that reaches the store answers within -db-timeout
	// (and a margin for a busy machine): 503 with Retry-After, never a
	// hang and never 401, also once the key cache's 1 s has passed.
	for round := range 2 {
		for _, r := range [][3]string{
			{"GET", "/v1/pets/987654", ""},
			{"GET", "/v1/pets?status=sold&limit=7", ""},
			{"POST", "/v1/store/orders", `{"petId":1,"quantity":1}`},
			{"GET", "/v1/store/orders", ""},
		} {
			begun := time.Now()
			status, h, body := call(t, r[0], base+r[1], faultKey, "", r[2])
			if d := time.Since(begun); status != 503 || h.Get("Retry-After") == "" || d > 2*time.Second {
				t.Fatalf("round %d, %s %s against a paused database: %d in %v, Retry-After=%q %s; want 503 within -db-timeout", round, r[0], r[1], status, d, h.Get("Retry-After"), body)
			}
		}
		if round == 0 {
			time.Sleep(1100 * time.Millisecond) // past the key cache's TTL: the key is looked up again
		}
	}
	// /readyz answers from a copy made at most once a second.
	until(t, 5*time.Second, "readyz is 503 naming the database", func() bool {
		status, _, body = call(t, "GET", base+"/readyz", "", "", "")
		return status == 503 && strings.Contains(body, "database")
	})
	if status, _, body := call(t, "GET", base+"/healthz", "", "", ""); status != 200 {
		t.Fatalf("healthz while paused: %d %s; liveness does not depend on the database", status, body)
	}
	proxy.Restore()
	until(t, 10*time.Second, "readyz is 200 again", func() bool {
		status, _, _ := call(t, "GET", base+"/readyz", "", "", "")
		return status == 200
	})
	if status, _, body := call(t, "POST", base+"/v1/pets", faultKey, "", `{"name":"After","categoryId":1}`); status != 201 {
		t.Fatalf("create after the pause: %d %s", status, body)
	}
}

// TestIdempotencyKeyFreeAfterOutage (item 8): a create whose key was
// claimed and whose insert then failed in a database outage leaves no key
// in flight once the database is back: the retry with the same
// Idempotency-Key creates the pet, exactly once. The outage is made to
// fall between the record's insert and the pet's: the pets table is
// locked from a direct connection, so the pet's insert waits; then the
// server's link to the database is cut.
func TestIdempotencyKeyFreeAfterOutage(t *testing.T) {
	dsn, direct, proxy := proxiedPostgresDirect(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "10s",
		"-keys", faultKey + ":enterprise:1000/10000"}, nil)
	post := func() (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/pets", strings.NewReader(`{"name":"Blip","categoryId":7}`))
		req.Header.Set("Authorization", "Bearer "+faultKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "create-blip-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var e struct{ Code string }
		_ = json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, e.Code
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
	first := make(chan int, 1)
	go func() { status, _ := post(); first <- status }()
	// The record and the pet are one transaction (issue 26): the record
	// is inserted, uncommitted, and the pet's insert waits on the lock.
	until(t, 10*time.Second, "the create waits on the locked table", func() bool {
		var n int
		err := direct.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO pets%' AND pid <> pg_backend_pid()").Scan(&n)
		return err == nil && n >= 1
	})
	proxy.Cut()
	if status := <-first; status != 503 {
		t.Fatalf("create cut under its insert: %d; want 503", status)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()

	var status int
	var code string
	until(t, 10*time.Second, "the retry is not refused as in flight", func() bool {
		status, code = post()
		return status != 503 && code != "idempotency_key_in_use"
	})
	if status != 201 {
		t.Fatalf("retry after the outage: %d %s; want 201", status, code)
	}
	if status, _ := post(); status != 201 { // the replay
		t.Fatalf("replay: %d", status)
	}
	var n int
	if err := direct.QueryRowContext(ctx, "SELECT count(*) FROM pets WHERE name = 'Blip'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d pets named Blip after the outage and retries (%v), want 1", n, err)
	}
}

// TestPoolCappedUnderBurst (item 2): 300 concurrent requests on a slow
// link to PostgreSQL or MariaDB. Uncapped, each would hold a connection
// of its own and past max_connections the database refuses them
// ("sorry, too many clients already", MySQL's 1040), for this server and
// everyone else on the database. With -db-max-conns the burst queues in
// the server instead.
func TestPoolCappedUnderBurst(t *testing.T) {
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			base, proxy := warmPooledServer(t, db.proxied, "8", "60s")
			proxy.SetLatency(10 * time.Millisecond) // each query now holds its connection for 20 ms or more

			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300}}
			defer client.CloseIdleConnections()
			const n = 300
			statuses := make(chan int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					// Creates: each needs the database, whatever is cached.
					req, _ := http.NewRequest("POST", base+"/v1/pets", strings.NewReader(`{"name":"Burst","categoryId":`+strconv.Itoa(i+1)+`}`))
					req.Header.Set("Authorization", "Bearer "+faultKey)
					req.Header.Set("Content-Type", "application/json")
					res, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					res.Body.Close()
					statuses <- res.StatusCode
				})
			}
			wg.Wait()
			close(statuses)
			counts := map[int]int{}
			for s := range statuses {
				counts[s]++
			}
			if counts[201] != n {
				t.Fatalf("statuses of %d concurrent creates: %v; want all 201", n, counts)
			}
			if c := proxy.Conns(); c > 8+db.feedConns+1 {
				t.Fatalf("%d connections to the database, over the cap of 8 (and the feed's %d, and /readyz's 1)", c, db.feedConns)
			}
		})
	}
}

// TestBurstBeyondThePoolAnswersWithinTheTimeout: the requests queued for
// a connection beyond -db-max-conns wait no longer than -db-timeout: over
// a slow link, a burst of creates that the pool cannot serve in time gets
// its 201s and, for the rest, 503 with Retry-After, each within the bound
// (the queue alone would take seconds).
func TestBurstBeyondThePoolAnswersWithinTheTimeout(t *testing.T) {
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			base, proxy := warmPooledServer(t, db.proxied, "2", "1s")
			proxy.SetLatency(100 * time.Millisecond)
			const n = 40
			type answer struct {
				status int
				retry  string
				took   time.Duration
			}
			answers := make(chan answer, n)
			for i := range n {
				go func() {
					start := time.Now()
					status, h, _ := callWithin(t, 10*time.Second, "POST", base+"/v1/pets", faultKey, `{"name":"Burst","categoryId":`+strconv.Itoa(i+1)+`}`)
					answers <- answer{status, h.Get("Retry-After"), time.Since(start)}
				}()
			}
			counts := map[int]int{}
			for range n {
				a := <-answers
				counts[a.status]++
				switch {
				case a.took > 2*time.Second:
					t.Errorf("a create answered %d after %v, with a 1 s -db-timeout", a.status, a.took)
				case a.status == 503 && a.retry == "":
					t.Error("a 503 without Retry-After")
				case a.status != 201 && a.status != 503:
					t.Errorf("a create answered %d, want 201 or 503", a.status)
				}
			}
			if counts[201] == 0 || counts[503] == 0 {
				t.Fatalf("statuses %v: want some created and the rest refused in time", counts)
			}
		})
	}
}

// warmPooledServer starts a server on the database proxied gives, through
// its fault proxy, with -db-max-conns conns and -db-timeout timeout, and
// answers one list before returning its base URL and the proxy.
func warmPooledServer(t *testing.T, proxied func(*testing.T) (string, *faultproxy.Proxy), conns, timeout string) (string, *faultproxy.Proxy) {
	t.Helper()
	dsn, proxy := proxied(t)
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-max-conns", conns, "-db-timeout", timeout, "-start-timeout", "30s",
		"-keys", faultKey + ":enterprise:100000/1000000"}, nil)
	if status, _, body := call(t, "GET", base+"/v1/pets", faultKey, "", ""); status != 200 {
		t.Fatalf("warm-up: %d %s", status, body)
	}
	return base, proxy
}

// TestShutdownWithAPausedDatabaseIsBounded: with the database's link
// paused (PostgreSQL, MariaDB), a stopping server still exits within its
// 15 s: closing the pool, whose connections each free their prepared
// statements over that link (5 s apiece), waits no longer than the
// shutdown may take.
func TestShutdownWithAPausedDatabaseIsBounded(t *testing.T) {
	t.Parallel()
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			dsn, proxy := db.proxied(t)
			s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-keys", faultKey + ":enterprise:100000/1000000"}, nil)
			send := func(method, path, body string) {
				req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+faultKey)
				req.Header.Set("Content-Type", "application/json")
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
			var wg sync.WaitGroup
			for i := range 20 { // a warm pool: several connections, each with statements prepared
				wg.Go(func() {
					send("POST", "/v1/pets", `{"name":"Warm","categoryId":`+strconv.Itoa(i+1)+`}`)
					send("GET", "/v1/pets/1", "")
				})
			}
			wg.Wait()
			proxy.Pause()
			defer proxy.Restore()
			begun := time.Now()
			s.stop() // fails the test if run has not returned within 20 s
			if d := time.Since(begun); d > shutdownGrace+2*time.Second {
				t.Fatalf("the server took %v to stop with its database paused, want at most %v", d, shutdownGrace)
			}
		})
	}
}

// TestStartWithAPausedDatabaseIsBounded: a server, or a keys command,
// whose database (PostgreSQL, MariaDB) accepts connections but never
// answers at start says so within -db-timeout and exits, rather than
// hang without a word.
func TestStartWithAPausedDatabaseIsBounded(t *testing.T) {
	t.Parallel()
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			dsn, proxy := db.proxied(t)
			proxy.Pause()
			defer proxy.Restore()
			for _, args := range [][]string{{"-addr", "127.0.0.1:0"}, {"keys", "list"}} {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel() // ends a run that hangs, once the test has failed
				done := make(chan error, 1)
				begun := time.Now()
				go func() {
					done <- run(ctx, append([]string{"-db", dsn, "-db-timeout", "1s"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
				}()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "within -db-timeout 1s") {
						t.Fatalf("%q with the database paused: %v, want an error naming -db-timeout", args, err)
					}
					if d := time.Since(begun); d > 3*time.Second {
						t.Fatalf("%q took %v to give up on a paused database, want about 1 s", args, d)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%q still waits for a paused database after 10 s; -db-timeout is 1s", args)
				}
			}
		})
	}
}

// TestStartPausedAfterTheMigrationsIsBounded: a database (PostgreSQL,
// MariaDB) that answers the first ping and the migrations, then stops
// answering while the server loads its custom domains, stores the -keys
// or makes the demo key, or while a keys or projects command runs,
// makes it exit with an error naming -db-timeout (or the server's
// -start-timeout, when set) once that passes, rather than start (or
// wait) for ever without a word. The link
// is paused while the server's query waits for a table lock the test
// holds from a direct connection until then, so the pause falls inside
// that step.
func TestStartPausedAfterTheMigrationsIsBounded(t *testing.T) {
	t.Parallel()
	for _, db := range []struct {
		name   string
		direct func(testing.TB) string
		// lock locks a table (%s) on conn; waiting, asked on another
		// connection (PostgreSQL shows a transaction one snapshot of
		// pg_stat_activity), tells how many sessions wait for it.
		lock    []string
		waiting string
	}{
		{"postgres", func(tb testing.TB) string { return testenv.PostgresSchema(tb) },
			[]string{"BEGIN", "LOCK TABLE %s IN ACCESS EXCLUSIVE MODE"},
			"SELECT count(*) FROM pg_stat_activity WHERE pg_blocking_pids(pid) && ARRAY(SELECT pid FROM pg_locks WHERE relation = '%s'::regclass AND granted)"},
		{"mariadb", func(tb testing.TB) string { return testenv.MySQLDatabase(tb) },
			[]string{"LOCK TABLES %s WRITE"},
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%' AND DB = DATABASE()"},
	} {
		for _, step := range []struct {
			name, table string
			args        []string
		}{
			{"domains", "domains", []string{"-keys", faultKey + ":pro"}},
			// -start-timeout, when set, bounds the start's steps instead.
			{"domains with -start-timeout", "domains", []string{"-db-timeout", "100ms", "-start-timeout", "1s", "-keys", faultKey + ":pro"}},
			{"keys", "api_keys", []string{"-keys", faultKey + ":pro"}},
			{"demo key", "api_keys", nil},
			// The commands, whose calls are bounded as a request's are.
			{"keys list", "api_keys", []string{"keys", "list"}},
			{"keys create", "api_keys", []string{"keys", "create", "-plan", "pro", "-deployed"}},
			{"projects list", "api_keys", []string{"projects", "list"}},
		} {
			t.Run(db.name+"/"+step.name, func(t *testing.T) {
				t.Parallel()
				direct := db.direct(t)
				proxy, dsn := faultproxy.StartFor(t, direct)
				holder, err := bunopen.Open(context.Background(), direct)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				if err := bunstore.Migrate(context.Background(), holder); err != nil {
					t.Fatal(err)
				}
				conn, err := holder.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				for _, q := range db.lock {
					if _, err := conn.ExecContext(context.Background(), strings.ReplaceAll(q, "%s", step.table)); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel() // ends a run that hangs, once the test has failed
				done := make(chan error, 1)
				go func() {
					done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "1s", "-migrate=false"}, step.args...),
						func(string) string { return "" }, io.Discard, io.Discard)
				}()
				until(t, 10*time.Second, "the server waits for the lock on "+step.table, func() bool {
					select {
					case err := <-done:
						t.Fatalf("the server did not wait for the lock on %s: %v", step.table, err)
					default:
					}
					var n int
					err := holder.QueryRowContext(context.Background(), strings.ReplaceAll(db.waiting, "%s", step.table)).Scan(&n)
					return err == nil && n >= 1
				})
				begun := pauseReleasing(t, proxy, conn, holder)
				select {
				case err := <-done:
					want := "within -db-timeout 1s"
					if slices.Contains(step.args, "-start-timeout") {
						want = "within -start-timeout 1s"
					}
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("start with the database paused after the migrations: %v, want an error saying %q", err, want)
					}
					if d := time.Since(begun); d > 3*time.Second {
						t.Fatalf("took %v after the pause to give up, want under the 1 s bound (%s) and a margin", d, want)
					}
				case <-time.After(15 * time.Second):
					t.Fatal("still starting on a paused database after 15 s; the bound is 1 s")
				}
			})
		}
	}
}

// TestMigrateWithAPausedDatabaseIsBounded: a database (PostgreSQL,
// MariaDB) that answers at start and then stops answering while the
// migrations run makes the server, or a keys command, exit with an
// error naming -migrate-timeout once it passes, rather than hang. The
// link is paused while Migrate waits for its lock, which the test holds
// from a direct connection until then, so the pause falls inside the
// migrations and not before them (-db-timeout bounds that part).
func TestMigrateWithAPausedDatabaseIsBounded(t *testing.T) {
	t.Parallel()
	for _, db := range []struct {
		name   string
		direct func(testing.TB) string
		// lock takes the migration lock of the DSN's schema or database
		// on conn; waiting tells how many sessions wait for it.
		lock, waiting string
	}{
		{"postgres", func(tb testing.TB) string { return testenv.PostgresSchema(tb) },
			"SELECT pg_advisory_lock(hashtext(current_schema() || '.petstore_migrate'))::text",
			"SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"},
		{"mariadb", func(tb testing.TB) string { return testenv.MySQLDatabase(tb) },
			"SELECT GET_LOCK(CONCAT('petstore_migrate:', DATABASE()), 10)",
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND DB = DATABASE()"},
	} {
		for _, args := range [][]string{{"-addr", "127.0.0.1:0"}, {"keys", "list"}} {
			t.Run(db.name+"/"+args[0], func(t *testing.T) {
				t.Parallel()
				direct := db.direct(t)
				proxy, dsn := faultproxy.StartFor(t, direct)
				holder, err := bunopen.Open(context.Background(), direct)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				conn, err := holder.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var got string
				if err := conn.QueryRowContext(context.Background(), db.lock).Scan(&got); err != nil {
					t.Fatalf("taking the migration lock: %v", err)
				}

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel() // ends a run that hangs, once the test has failed
				done := make(chan error, 1)
				go func() {
					done <- run(ctx, append([]string{"-db", dsn, "-db-timeout", "1s", "-migrate-timeout", "2s"}, args...),
						func(string) string { return "" }, io.Discard, io.Discard)
				}()
				until(t, 10*time.Second, "Migrate waits for its lock", func() bool {
					var n int
					return conn.QueryRowContext(context.Background(), db.waiting).Scan(&n) == nil && n == 1
				})
				begun := pauseReleasing(t, proxy, conn, holder)
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "within -migrate-timeout 2s") {
						t.Fatalf("%q with the database paused during the migrations: %v, want an error naming -migrate-timeout", args, err)
					}
					if _, usage := usageOf(err); usage {
						t.Fatalf("%q: %v is a usage error (exit status 2), want a failure (1)", args, err)
					}
					if d := time.Since(begun); d > 4*time.Second {
						t.Fatalf("%q took %v after the pause to give up, want under the 2 s -migrate-timeout and a margin", args, d)
					}
				case <-time.After(15 * time.Second):
					t.Fatalf("%q still migrates a paused database after 15 s; -migrate-timeout is 2s", args)
				}
			})
		}
	}
}

// TestDatabaseRestartIsTransparent: when PostgreSQL closes the pool's
// idle connections (a restart; here the fault proxy cuts them all and
// accepts again at once), the next request of each kind is served on a
// fresh connection, not answered 503 for a dead one it never reached
// the server on, however recently those connections were used; the pet
// it creates is stored once. Over TLS too (sslmode=require), when the
// server has it on.
func TestDatabaseRestartIsTransparent(t *testing.T) {
	t.Parallel()
	for _, sslmode := range []string{"disable", "require"} {
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/v1/pets", ""},
			{"GET", "/v1/pets/1", ""},
			{"POST", "/v1/pets", `{"name":"Restarted","categoryId":1}`},
		} {
			t.Run(sslmode+"/"+req.method+req.path, func(t *testing.T) {
				t.Parallel()
				dsn, proxy := proxiedPostgres(t)
				u, err := url.Parse(dsn)
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("sslmode", sslmode)
				u.RawQuery = q.Encode()
				if sslmode != "disable" {
					if ssl := showSSL(t, dsn); ssl != "on" {
						t.Skipf("the PostgreSQL server has TLS off (ssl = %s)", ssl)
					}
				}
				base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", u.String(), "-db-timeout", "2s",
					"-keys", faultKey + ":enterprise:100000/1000000"}, nil)
				if status, _, body := call(t, "POST", base+"/v1/pets", faultKey, "", `{"name":"First","categoryId":1}`); status != 201 {
					t.Fatalf("before: POST /v1/pets = %d %s", status, body)
				}
				// Used a moment ago, as on a busy server: pgx pings a
				// connection before reusing it only after a second idle.
				for range 3 {
					if status, _, body := call(t, req.method, base+req.path, faultKey, "", req.body); status/100 != 2 {
						t.Fatalf("before: %s %s = %d %s", req.method, req.path, status, body)
					}
				}
				proxy.Cut()
				proxy.Restore()
				if status, _, body := call(t, req.method, base+req.path, faultKey, "", req.body); status/100 != 2 {
					t.Fatalf("after the connections were closed: %s %s = %d %s, want it served on a fresh connection", req.method, req.path, status, body)
				}
				if req.method == "POST" {
					status, _, list := call(t, "GET", base+"/v1/pets", faultKey, "", "")
					if n := strings.Count(list, `"Restarted"`); status != 200 || n != 4 {
						t.Fatalf("GET /v1/pets = %d with %d pets named Restarted, want 4 for 4 POSTs: %s", status, n, list)
					}
				}
			})
		}
	}
}

// showSSL returns PostgreSQL's ssl setting ("on" or "off") through dsn.
func showSSL(t *testing.T, dsn string) string {
	t.Helper()
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ssl string
	if err := db.QueryRowContext(context.Background(), "SHOW ssl").Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	return ssl
}
