package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/testenv"
)

// command runs a subcommand the way an operator would and returns what
// it printed.
func command(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, func(string) string { return "" }, &out, &out); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// keyIDOf finds the key id the access log gave requests.
func keyIDOf(t *testing.T, s *testServer) string {
	t.Helper()
	s.stop() // flushes the log
	m := regexp.MustCompile(`key_id=(\S+)`).FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no key_id in the log:\n%s", s.logs.String())
	}
	return m[1]
}

// TestOperatorCommandsInMemory runs the commands against a running
// server's admin endpoint, as an operator with in-memory limits does.
func TestOperatorCommandsInMemory(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", freeKey + ":free", "-admin-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`operator endpoint at http://(\S+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	admin := m[1]
	for range 3 {
		if code := do(t, "GET", s.base+"/v1/pets", freeKey, "", ""); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	if code := do(t, "GET", s.base+"/admin/bans", "", "", ""); code != 404 {
		t.Fatalf("the admin endpoint answers %d on the public listener, want 404", code)
	}
	if out := command(t, "-db", db, "-admin-addr", admin, "bans", "list"); !strings.Contains(out, "no bans in force") {
		t.Fatalf("bans list: %q", out)
	}
	if out := command(t, "-db", db, "-admin-addr", admin, "bans", "lift", "192.0.2.7"); !strings.Contains(out, "192.0.2.7 was not banned") {
		t.Fatalf("bans lift: %q", out)
	}
	// The key id is in the log; read it without stopping the server first.
	id := regexp.MustCompile(`key_id=(\S+)`).FindStringSubmatch(waitLog(t, s, "key_id="))
	out := command(t, "-db", db, "-admin-addr", admin, "keys", "usage", id[1])
	if !strings.Contains(out, "minute\t3 of 60 used, 57 left") || !strings.Contains(out, "day\t3 of 1000 used, 997 left") {
		t.Fatalf("keys usage: %q", out)
	}
	var buf bytes.Buffer
	err := run(context.Background(), []string{"-db", db, "-admin-addr", admin, "keys", "usage", "key_nope"}, func(string) string { return "" }, &buf, &buf)
	if err == nil || !strings.Contains(err.Error(), "no key with id key_nope") {
		t.Fatalf("usage of an unknown key: %v", err)
	}
}

// TestOperatorCommandsThroughTheServerOpenNoDatabase: through -admin-addr
// the commands ask the running server, which knows the keys, so they
// neither need -db nor touch it: an operator running one from another
// directory finds no new petstore.db there, and none is migrated.
func TestOperatorCommandsThroughTheServerOpenNoDatabase(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"bans":[]}`)
	}))
	defer admin.Close()
	path := filepath.Join(t.TempDir(), "untouched.db")
	out := command(t, "-db", "sqlite:"+path, "-admin-addr", admin.Listener.Addr().String(), "bans", "list")
	if !strings.Contains(out, "no bans in force") {
		t.Fatalf("bans list: %q", out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("bans list through -admin-addr made the database %s", path)
	}
}

// TestOperatorCommandsRedis runs the commands on the shared Redis
// counters directly, with no admin endpoint.
func TestOperatorCommandsRedis(t *testing.T) {
	redisURL := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, testenv.RedisClient(t), "server")
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", freeKey + ":free", "-redis", redisURL, "-redis-prefix", prefix}, nil)
	for range 2 {
		if code := do(t, "GET", s.base+"/v1/pets", freeKey, "", ""); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	id := keyIDOf(t, s)
	out := command(t, "-db", db, "-redis", redisURL, "-redis-prefix", prefix, "keys", "usage", id)
	// Redis counts the shares the server leased: the 2 requests, and at
	// most 2 more the server holds unused (docs/rate-limits.md).
	if m := regexp.MustCompile(`minute\t(\d+) of 60 used`).FindStringSubmatch(out); m == nil || m[1] < "2" || m[1] > "4" || len(m[1]) != 1 {
		t.Fatalf("keys usage: %q, want 2 to 4 of 60 used", out)
	}
	if out := command(t, "-db", db, "-redis", redisURL, "-redis-prefix", prefix, "bans", "lift", id); !strings.Contains(out, "was not banned") {
		t.Fatalf("bans lift: %q", out)
	}
	if _, err := runErr("-db", db, "bans", "list"); err == nil || !strings.Contains(err.Error(), "-admin-addr") {
		t.Fatalf("without -redis or -admin-addr: %v, want an error naming -admin-addr", err)
	}
}

func runErr(args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &out)
	return out.String(), err
}

// waitLog waits until the server's log holds want (the log is written
// out every 100 ms) and returns it.
func waitLog(t *testing.T, s *testServer, want string) string {
	t.Helper()
	for i := 0; ; i++ {
		if l := s.logs.String(); strings.Contains(l, want) {
			return l
		}
		if i > 500 {
			t.Fatalf("the log never held %q:\n%s", want, s.logs.String())
		}
		// Poll for the outcome: the buffered log is flushed on a ticker.
		waitTick()
	}
}

// adminRequest sends a request to the operator endpoint with the given
// headers and returns its status.
func adminRequest(t *testing.T, method, url string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestAdminEndpointRefusesStrangers (issue 26): a DNS-rebinding page
// (foreign Host) and a cross-origin browser page cannot lift bans; the
// endpoint listens beyond loopback only with PETSTORE_ADMIN_TOKEN, and
// then only answers requests carrying it.
func TestAdminEndpointRefusesStrangers(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-admin-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`operator endpoint at http://(\S+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	lift := "http://" + m[1] + "/admin/bans/192.0.2.7"
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"the operator's command", nil, 200},
		{"localhost with the port", map[string]string{"Host": "localhost:" + strings.Split(m[1], ":")[1]}, 200},
		{"DNS rebinding", map[string]string{"Host": "attacker.example:" + strings.Split(m[1], ":")[1]}, 400},
		{"another port", map[string]string{"Host": "127.0.0.1:1"}, 400},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, 400},
		{"same-site fetch of another origin", map[string]string{"Sec-Fetch-Site": "same-site"}, 400},
		{"foreign Origin", map[string]string{"Origin": "http://attacker.example"}, 400},
		{"its own origin", map[string]string{"Origin": "http://" + m[1], "Sec-Fetch-Site": "same-origin"}, 200},
	} {
		if got := adminRequest(t, "DELETE", lift, c.header); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}

	// Beyond loopback: refused without a token.
	if _, err := runErr("-addr", "127.0.0.1:0", "-db", "memory", "-admin-addr", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "PETSTORE_ADMIN_TOKEN") {
		t.Fatalf("-admin-addr 0.0.0.0 without a token: %v, want a refusal naming PETSTORE_ADMIN_TOKEN", err)
	}
	const token = "psk_AdminTok3nQ7vX2mK9wL4zR8"
	s = startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-admin-addr", "0.0.0.0:0"},
		map[string]string{"PETSTORE_ADMIN_TOKEN": token})
	m = regexp.MustCompile(`operator endpoint at http://\S+:(\d+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	lift = "http://127.0.0.1:" + m[1] + "/admin/bans/192.0.2.7"
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer psk_wrong"}, 401},
		{"the token", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"the token, rebinding Host", map[string]string{"Authorization": "Bearer " + token, "Host": "attacker.example:" + m[1]}, 400},
	} {
		if got := adminRequest(t, "DELETE", lift, c.header); got != c.want {
			t.Errorf("token %s: %d, want %d", c.name, got, c.want)
		}
	}
	if strings.Contains(s.logs.String(), token) || strings.Contains(strings.Join(s.printed, "\n"), token) {
		t.Fatal("the token was printed")
	}
}

// TestAdminGuardAcceptsTheGivenName: an -admin-addr given as a host name
// (one that resolves to the endpoint) is what the commands send in Host,
// so it is accepted; another name still is not.
func TestAdminGuardAcceptsTheGivenName(t *testing.T) {
	listen := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 9000}
	h := adminGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), listen, "tok", "admin.internal")
	for host, want := range map[string]int{
		"admin.internal:9000":   200,
		"10.0.0.7:9000":         200,
		"admin.internal:9001":   400,
		"attacker.example:9000": 400,
	} {
		r := httptest.NewRequest("GET", "http://"+host+"/admin/bans", nil)
		r.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

// TestKeysUsageThroughTheServerWithAPausedDatabase: "keys usage" through
// -admin-addr asks the running server, which reads the key's plan from
// the database. With the database's link paused, the server answers
// within its -db-timeout (503, as a request's store call would), and the
// command exits with that error, rather than both waiting for ever.
func TestKeysUsageThroughTheServerWithAPausedDatabase(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "1s", "-start-timeout", "30s",
		"-keys", freeKey + ":free", "-admin-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`operator endpoint at http://(\S+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	if code := do(t, "GET", s.base+"/v1/pets", freeKey, "", ""); code != 200 {
		t.Fatalf("status %d", code)
	}
	id := regexp.MustCompile(`key_id=(\S+)`).FindStringSubmatch(waitLog(t, s, "key_id="))
	proxy.Pause()
	defer proxy.Restore()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends a command that hangs, once the test has failed
	done := make(chan error, 1)
	begun := time.Now()
	go func() {
		done <- run(ctx, []string{"-admin-addr", m[1], "keys", "usage", id[1]}, func(string) string { return "" }, io.Discard, io.Discard)
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("keys usage with the server's database paused: %v, want the server's 503", err)
		}
		if d := time.Since(begun); d > 4*time.Second {
			t.Fatalf("keys usage took %v with the server's database paused, want about its 1 s -db-timeout", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("keys usage still waits after 15 s on a server whose database is paused; its -db-timeout is 1s")
	}
}

// TestOperatorCommandWithAHungServer: an operator command through
// -admin-addr whose server does not answer at all (a stopped or hung
// process: the kernel accepts the connection, nothing reads it) gives up
// within its -db-timeout and a margin, with an error saying so, rather
// than wait for ever.
func TestOperatorCommandWithAHungServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // never accepted: a SIGSTOPped server's listener
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends a command that hangs, once the test has failed
	done := make(chan error, 1)
	begun := time.Now()
	go func() {
		done <- run(ctx, []string{"-admin-addr", ln.Addr().String(), "-db-timeout", "1s", "bans", "list"}, func(string) string { return "" }, io.Discard, io.Discard)
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "gave no answer within 6s") {
			t.Fatalf("bans list with the server hung: %v, want an error saying it gave no answer", err)
		}
		if d := time.Since(begun); d > 9*time.Second {
			t.Fatalf("bans list took %v with the server hung, want about 6 s", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bans list still waits after 20 s on a server that does not answer")
	}
}
