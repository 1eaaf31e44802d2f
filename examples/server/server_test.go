package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/memzone"
)

// call makes one request and returns the status, headers and body.
func call(t *testing.T, method, url, key, host, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

var demoKeyRE = regexp.MustCompile(`Bearer (psk_\S+)'`)

// The default SQLite file keeps pets, orders and keys across restarts: the demo
// key printed on first start still works, and no second one is printed.
func TestRestartKeepsPetsAndKeys(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "petstore.db")
	args := []string{"-addr", "127.0.0.1:0", "-db", db}

	base, printed, stop := startStoppable(t, args, nil)
	m := demoKeyRE.FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no demo key printed on first start:\n%s", strings.Join(printed, "\n"))
	}
	key := m[1]
	status, hdr, body := call(t, "POST", base+"/v1/pets", key, "", `{"name":"Rex","categoryId":7,"status":"available"}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	loc := hdr.Get("Location")
	petID := strings.TrimPrefix(loc, "/v1/pets/")
	status, hdr, body = call(t, "POST", base+"/v1/store/orders", key, "", `{"petId":`+petID+`,"quantity":2}`)
	if status != 201 || hdr.Get("X-API-Stability") != "beta" {
		t.Fatalf("create order: %d %v %s", status, hdr, body)
	}
	orderLoc := hdr.Get("Location")
	stop()

	base, printed, _ = startStoppable(t, args, nil)
	if out := strings.Join(printed, "\n"); strings.Contains(out, "demo API key") {
		t.Fatalf("a second demo key was printed after restart:\n%s", out)
	}
	status, _, body = call(t, "GET", base+loc, key, "", "")
	if status != 200 || !strings.Contains(body, `"name":"Rex"`) {
		t.Fatalf("after restart GET %s: %d %s", loc, status, body)
	}
	status, _, body = call(t, "GET", base+orderLoc, key, "", "")
	if status != 200 || !strings.Contains(body, `"quantity":2`) {
		t.Fatalf("after restart GET %s: %d %s", orderLoc, status, body)
	}
}

// runCmd runs the server binary's logic with a subcommand and returns what
// it printed.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, io.Discard)
	return out.String(), err
}

func TestKeysSubcommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "keys.db")
	out, err := runCmd(t, "-db", db, "keys", "create", "-plan", "free")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	secret := regexp.MustCompile(`key:\s+(psk_\S+)`).FindStringSubmatch(out)
	id := regexp.MustCompile(`id:\s+(key_\S+)`).FindStringSubmatch(out)
	if secret == nil || id == nil {
		t.Fatalf("keys create printed no id and key:\n%s", out)
	}

	out, err = runCmd(t, "-db", db, "keys", "list")
	if err != nil || !strings.Contains(out, id[1]) || !strings.Contains(out, "free") || strings.Contains(out, secret[1]) {
		t.Fatalf("keys list (err %v) must show the id and plan and never the secret:\n%s", err, out)
	}
	if out, err = runCmd(t, "-db", db, "keys", "set-plan", id[1], "business"); err != nil {
		t.Fatalf("set-plan: %v\n%s", err, out)
	}

	// The server started on that database authenticates the key, on its
	// new plan's limits, and prints no demo key.
	base, printed, stop := startStoppable(t, []string{"-addr", "127.0.0.1:0", "-db", db}, nil)
	if strings.Contains(strings.Join(printed, "\n"), "demo API key") {
		t.Fatal("demo key printed although the database has keys")
	}
	status, hdr, _ := call(t, "GET", base+"/v1/pets", secret[1], "", "")
	if status != 200 || hdr.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("created key after set-plan business: %d, X-RateLimit-Limit %q", status, hdr.Get("X-RateLimit-Limit"))
	}
	stop()

	if out, err = runCmd(t, "-db", db, "keys", "revoke", id[1]); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	// No change feed reaches servers on SQLite: the command says for how
	// long servers following another feed may still accept the key.
	if !strings.Contains(out, "no change feed was reached") || !strings.Contains(out, "for up to 1m0s") {
		t.Fatalf("revoke without a feed does not state the bound:\n%s", out)
	}
	base, _, _ = startStoppable(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", "psk_Other4gT9kP2wQ7zM3rV8n:free"}, nil)
	if status, _, _ := call(t, "GET", base+"/v1/pets", secret[1], "", ""); status != 401 {
		t.Fatalf("revoked key: %d, want 401", status)
	}
}

// /healthz tells an operator that rate limits fail open while Redis is
// unreachable, and the API keeps answering meanwhile.
func TestHealthReportsDegradedLimits(t *testing.T) {
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", testKey + ":free"}, nil)
	if status, _, body := call(t, "GET", base+"/healthz", "", "", ""); status != 200 || !strings.Contains(body, `"degraded":false`) {
		t.Fatalf("healthz with in-memory limits: %d %s", status, body)
	}

	base, _ = start(t, []string{"-addr", "127.0.0.1:0", "-keys", testKey + ":free", "-redis", "127.0.0.1:1"}, nil)
	status, hdr, body := call(t, "GET", base+"/v1/pets", testKey, "", "")
	if status != 200 || hdr.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("fail-open with Redis down: %d, X-RateLimit-Limit %q (want the Free plan's 60), %s", status, hdr.Get("X-RateLimit-Limit"), body)
	}
	if status, _, body := call(t, "GET", base+"/healthz", "", "", ""); status != 200 || !strings.Contains(body, `"degraded":true`) {
		t.Fatalf("healthz with Redis down: %d %s", status, body)
	}

	base, _ = start(t, []string{"-addr", "127.0.0.1:0", "-keys", testKey + ":free", "-redis", "127.0.0.1:1", "-ratelimit-fail", "closed"}, nil)
	if status, _, body := call(t, "GET", base+"/v1/pets", testKey, "", ""); status != 503 || !strings.Contains(body, "unavailable") {
		t.Fatalf("fail-closed with Redis down: %d %s", status, body)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-migrate", "maybe"},
		{"-ratelimit-fail", "sometimes"},
		{"-trusted-proxies", "not-an-ip"},
		{"-edge-ips", "edge.example"},
		{"-tls-addr", ":8443"},
		{"-db", "oracle://x"},
		{"-redis", "http://127.0.0.1:6379"},
		{"stray"},
		// Operator keys are stored as unsalted hashes: weak or repeated
		// secrets are refused at start.
		{"-max-domains-per-project", "0"},
		{"-max-domains-per-project", "many"},
		{"-keys", "a:pro"},
		{"-keys", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa:pro"},
		{"-keys", testKey + ":free," + testKey + ":pro"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if out, err := runCmd(t, append([]string{"-addr", "127.0.0.1:0", "-db", "memory"}, args...)...); err == nil {
				t.Fatalf("accepted %v:\n%s", args, out)
			}
		})
	}
}

// TestBadMigrateTimeout: -migrate-timeout takes a positive duration; any
// other value is a usage error (exit status 2), found before the
// database is opened.
func TestBadMigrateTimeout(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "never.db") // the subtests' own have a '#'
	for _, v := range []string{"0", "-1m", "soon", ""} {
		t.Run(v, func(t *testing.T) {
			_, err := runCmd(t, "-addr", "127.0.0.1:0", "-db", db, "-migrate-timeout", v)
			if _, usage := usageOf(err); err == nil || !usage || !strings.Contains(err.Error(), "-migrate-timeout") {
				t.Fatalf("-migrate-timeout %q: %v, want a usage error naming the flag", v, err)
			}
		})
	}
}

// TestFailClosedNeedsRedis: -ratelimit-fail closed says what to do
// while the shared counter store (-redis) is down; without -redis the
// limits are in memory, which never fails, so the flag would mean
// nothing. It is a usage error (exit status 2) naming both flags, given
// as a flag or as the variable, never a server started as if it held.
func TestFailClosedNeedsRedis(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"flag":     {args: []string{"-ratelimit-fail", "closed"}},
		"variable": {env: map[string]string{"PETSTORE_RATELIMIT_FAIL": "closed"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-addr", "127.0.0.1:0", "-db", "memory"}, tc.args...)
			// A server that starts anyway is stopped, for the test to fail.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			if _, usage := usageOf(err); err == nil || !usage || !strings.Contains(err.Error(), "-ratelimit-fail") || !strings.Contains(err.Error(), "-redis") {
				t.Fatalf("-ratelimit-fail closed without -redis: %v, want a usage error naming -ratelimit-fail and -redis", err)
			}
		})
	}
}

// The whole custom-domain flow of the spec through the example server:
// add a domain on the dashboard API, create the CNAME it asks for in a
// real DNS server, verify, and the edge serves the project on that Host;
// remove it and the Host is 404 at once.
func TestCustomDomainFlow(t *testing.T) {
	zone, dns := memzone.NewTestServer(t, "example.com.")
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k:pro,psk_Free7hQ2nX9vL4mR8tK3wPe5:free",
		"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.test"}, nil)

	status, _, body := call(t, "POST", base+"/dashboard/api/domains", "psk_Free7hQ2nX9vL4mR8tK3wPe5", "", `{"name":"free.example.com"}`)
	if status != 403 || !strings.Contains(body, "plan_required") {
		t.Fatalf("Free plan add: %d %s", status, body)
	}
	status, _, body = call(t, "POST", base+"/dashboard/api/domains", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "", `{"name":"Shop.Example.com"}`)
	if status != 201 {
		t.Fatalf("add: %d %s", status, body)
	}
	var d struct {
		Name    string                               `json:"name"`
		Status  string                               `json:"status"`
		Records []struct{ Type, Name, Value string } `json:"records"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "shop.example.com" || d.Status != "pending" || len(d.Records) != 2 ||
		d.Records[0].Type != "CNAME" || d.Records[0].Name != "shop" || d.Records[0].Value != "edge.petstore.test" {
		t.Fatalf("added domain: %+v", d)
	}
	if status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", ""); status != 404 {
		t.Fatalf("pending domain served: %d", status)
	}

	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.test."},
	}); err != nil {
		t.Fatal(err)
	}
	status, _, body = call(t, "POST", base+"/dashboard/api/domains/shop.example.com/verify", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "", "")
	if status != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("verify: %d %s", status, body)
	}
	status, _, body = call(t, "GET", base+"/", "", "shop.example.com:8080", "")
	if status != 200 {
		t.Fatalf("live domain /: %d %s", status, body)
	}
	if status, _, _ := call(t, "GET", base+"/v1/pets", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "shop.example.com", ""); status != 200 {
		t.Fatalf("live domain /v1/pets: %d", status)
	}

	status, _, body = call(t, "DELETE", base+"/dashboard/api/domains/shop.example.com", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "", "")
	if status != 204 {
		t.Fatalf("remove: %d %s", status, body)
	}
	status, _, body = call(t, "GET", base+"/", "", "shop.example.com", "")
	if status != 404 || !strings.Contains(body, "not_found") {
		t.Fatalf("removed domain: %d %s", status, body)
	}
}

// TestMaxDomainsFlag: the per-project cap is configurable; beyond it an
// add is 400 with a message, and a removed domain frees its slot.
func TestMaxDomainsFlag(t *testing.T) {
	const pro = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", pro + ":pro"},
		map[string]string{"PETSTORE_MAX_DOMAINS_PER_PROJECT": "1"})
	add := func(name string) (int, string) {
		status, _, body := call(t, "POST", base+"/dashboard/api/domains", pro, "", `{"name":"`+name+`"}`)
		return status, body
	}
	if status, body := add("one.example.com"); status != 201 {
		t.Fatalf("first: %d %s", status, body)
	}
	if status, body := add("two.example.com"); status != 400 || !strings.Contains(body, "remove one") {
		t.Fatalf("over the cap: %d %s", status, body)
	}
	if status, _, body := call(t, "DELETE", base+"/dashboard/api/domains/one.example.com", pro, "", ""); status != 204 {
		t.Fatalf("remove: %d %s", status, body)
	}
	if status, body := add("two.example.com"); status != 201 {
		t.Fatalf("after removing: %d %s", status, body)
	}
}

// TestRevokedOperatorKeyStaysRevoked (issue 26): a key listed in -keys
// and revoked with "keys revoke" stays revoked when the server restarts
// with the same -keys, under no new id or project; the server says so
// once at start, without the secret; "keys unrevoke" reinstates it with
// its id and project.
func TestRevokedOperatorKeyStaysRevoked(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "revoked.db")
	const listed = "psk_Listed6hW3qZ8nR2vK9xT4m"
	args := []string{"-addr", "127.0.0.1:0", "-db", db, "-keys", listed + ":pro," + testKey + ":free"}
	keyID := func() (id, project string) {
		out, err := runCmd(t, "-db", db, "keys", "list")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[2] == "pro" {
				return f[0], f[1]
			}
		}
		return "", ""
	}

	srv := startServer(t, args, nil)
	if status, _, _ := call(t, "GET", srv.base+"/v1/pets", listed, "", ""); status != 200 {
		t.Fatalf("listed key: %d, want 200", status)
	}
	srv.stop()
	id, project := keyID()
	if out, err := runCmd(t, "-db", db, "keys", "revoke", id); err != nil || !strings.Contains(out, "keys unrevoke "+id) {
		t.Fatalf("revoke: %v\n%s", err, out)
	}

	for range 2 { // restarts, as any replica does
		srv = startServer(t, args, nil)
		if status, _, _ := call(t, "GET", srv.base+"/v1/pets", listed, "", ""); status != 401 {
			t.Fatalf("revoked key after a restart: %d, want 401", status)
		}
		if status, _, _ := call(t, "GET", srv.base+"/v1/pets", testKey, "", ""); status != 200 {
			t.Fatalf("the other listed key after a restart: %d, want 200", status)
		}
		srv.stop()
		logs := srv.logs.String()
		if n := strings.Count(logs, "was revoked and is not added again"); n != 1 || !strings.Contains(logs, id) {
			t.Fatalf("the start logged the revoked key %d times (want once, naming %s):\n%s", n, id, logs)
		}
		if strings.Contains(logs, listed) {
			t.Fatal("the log shows the revoked key's secret")
		}
		if again, _ := keyID(); again != "" {
			t.Fatalf("the revoked key came back as %s", again)
		}
	}

	if out, err := runCmd(t, "-db", db, "keys", "unrevoke", id); err != nil || !strings.Contains(out, "reinstated "+id) {
		t.Fatalf("unrevoke: %v\n%s", err, out)
	}
	srv = startServer(t, args, nil)
	if status, _, _ := call(t, "GET", srv.base+"/v1/pets", listed, "", ""); status != 200 {
		t.Fatalf("reinstated key: %d, want 200", status)
	}
	srv.stop()
	if gotID, gotProject := keyID(); gotID != id || gotProject != project {
		t.Fatalf("reinstated as %s in %s, want %s in %s", gotID, gotProject, id, project)
	}
}

// With short -recheck-active and -drift-grace, a live domain whose CNAME
// is pointed elsewhere is shown misconfigured while it is still served,
// then released and no longer served, by the server's own background loop
// on the real clock (the schedule itself is tested on a fake clock in
// customdomain and httpx).
func TestCustomDomainDriftFlags(t *testing.T) {
	t.Parallel()
	zone, dns := memzone.NewTestServer(t, "example.com.")
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", key + ":pro",
		"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.test",
		"-recheck-active", "1s", "-drift-grace", "6s"}, nil)
	ctx := context.Background()
	setCNAME := func(target string) {
		t.Helper()
		if _, err := zone.SetRecords(ctx, "example.com.", []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Minute, Target: target}}); err != nil {
			t.Fatal(err)
		}
	}
	setCNAME("edge.petstore.test.")
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains", key, "", `{"name":"shop.example.com"}`); status != 201 {
		t.Fatalf("add: %d %s", status, body)
	}
	if status, _, body := call(t, "POST", base+"/dashboard/api/domains/shop.example.com/verify", key, "", ""); status != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("verify: %d %s", status, body)
	}
	setCNAME("elsewhere.example.net.")
	await := func(want string) string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, _, body := call(t, "GET", base+"/dashboard/api/domains", key, "", "")
			if strings.Contains(body, `"status":"`+want+`"`) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("not %s after 30 s: %s", want, body)
			}
		}
	}
	if body := await("misconfigured"); !strings.Contains(body, "points to elsewhere.example.net") {
		t.Fatalf("misconfigured without saying where the record points: %s", body)
	}
	if status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", ""); status != 200 {
		t.Fatalf("a misconfigured domain within its grace is not served: %d", status)
	}
	await("released")
	if status, _, _ := call(t, "GET", base+"/", "", "shop.example.com", ""); status != 404 {
		t.Fatalf("a released domain is served: %d", status)
	}
}
