package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/testenv"
)

// Every answer of the server is a JSON Error, the platform's unknown paths
// included: the API's neighbours a client may mistype.
func TestUnknownPathsAreJSON(t *testing.T) {
	base, _, _ := startStoppable(t, []string{"-addr", "127.0.0.1:0", "-keys", planKey + ":pro"}, nil)
	for _, path := range []string{"/", "/v2/pets", "/V1/pets", "/favicon.ico"} {
		status, hdr, body := call(t, "GET", base+path, planKey, "", "")
		var e struct {
			Code   string
			Status int
		}
		if status != http.StatusNotFound || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil || e.Code != "not_found" || e.Status != 404 {
			t.Errorf("GET %s: %d %s %q, want a 404 JSON Error", path, status, hdr.Get("Content-Type"), body)
		}
	}
	status, hdr, body := call(t, "POST", base+"/healthz", "", "", "")
	if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, HEAD" || !strings.Contains(body, `"method_not_allowed"`) {
		t.Errorf("POST /healthz: %d Allow %q %s, want a 405 JSON Error", status, hdr.Get("Allow"), body)
	}
}

// Profiles are served on loopback only: any other -pprof-addr is refused
// at start.
func TestPprofOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{":6060", "0.0.0.0:6060", "[::]:6060", "192.0.2.1:6060", "example.com:6060", "6060"} {
		if _, err := parseConfig([]string{"-pprof-addr", addr}, func(string) string { return "" }, &strings.Builder{}); err == nil {
			t.Errorf("-pprof-addr %s accepted", addr)
		}
	}
	_, printed, _ := startStoppable(t, []string{"-addr", "127.0.0.1:0", "-pprof-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`profiles at (http://\S+)`).FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no profiles address printed:\n%s", strings.Join(printed, "\n"))
	}
	if status, _, body := call(t, "GET", m[1]+"goroutine?debug=1", "", "", ""); status != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("GET %sgoroutine: %d %.200s", m[1], status, body)
	}
	// The command line may carry secrets given as flags: not served. A
	// page that rebound its own name to loopback is refused by Host.
	if status, _, body := call(t, "GET", m[1]+"cmdline", "", "", ""); status == 200 || strings.Contains(body, "pprof-addr") {
		t.Fatalf("GET %scmdline: %d %.200s; want the command line kept back", m[1], status, body)
	}
	if status, _, body := call(t, "GET", m[1]+"goroutine?debug=1", "", "rebound.example:6060", ""); status != http.StatusBadRequest {
		t.Fatalf("GET %sgoroutine with a foreign Host: %d %.200s; want 400", m[1], status, body)
	}
}

// pageBound is how soon another process serves a page that a create
// through one process changed: the change feed's delivery, a few
// milliseconds, bounded as the domain removal is.
const pageBound = 100 * time.Millisecond

// Two processes on one PostgreSQL schema cache their pages; once A
// answers a create, B serves the new page to every request sent pageBound
// later, however often it served the old one. Their feed is
// PostgreSQL's LISTEN/NOTIFY, or Redis pub/sub with -redis.
func TestPagesChangeOnEveryProcess(t *testing.T) {
	testenv.PostgresDSN(t)
	bin := builds.Build(t, ".")
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"PostgreSQL", false}, {"Redis", true}} {
		t.Run(tc.name, func(t *testing.T) {
			common := []string{"-addr", "127.0.0.1:0", "-db", testenv.PostgresSchema(t), "-keys", planKey + ":pro"}
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
			// Each create is seen on the page of all pets and on its
			// status's page, which the feed's change names.
			for i, status := range []string{"", "pending", "sold"} {
				pages := []string{"/v1/pets?limit=100"}
				body := fmt.Sprintf(`{"name":"pet %d","categoryId":1}`, i)
				if status != "" {
					pages = append(pages, "/v1/pets?limit=100&status="+status)
					body = fmt.Sprintf(`{"name":"pet %d","categoryId":1,"status":%q}`, i, status)
				}
				for _, page := range pages {
					for range 3 { // B's page is cached from the second read on
						if code, _, got := call(t, "GET", b+page, planKey, "", ""); code != 200 {
							t.Fatalf("list on B: %d %s", code, got)
						}
					}
				}
				name := fmt.Sprintf("pet %d", i)
				if code, _, got := call(t, "POST", a+"/v1/pets", planKey, "", body); code != 201 {
					t.Fatalf("create on A: %d %s", code, got)
				}
				began := time.Now()
				for _, page := range pages {
					for {
						// The bound is on when a request is sent, not on
						// when a loaded machine gets its answer back.
						sent := time.Since(began)
						_, _, got := call(t, "GET", b+page, planKey, "", "")
						if strings.Contains(got, `"`+name+`"`) {
							t.Logf("B served %s with the new pet to a request sent %v after A answered the create", page, sent)
							break
						}
						if sent > pageBound {
							t.Fatalf("B served %s without %q to a request sent %v after A answered the create", page, name, sent)
						}
						time.Sleep(2 * time.Millisecond)
					}
					// A reads its own write at once.
					if _, _, got := call(t, "GET", a+page, planKey, "", ""); !strings.Contains(got, `"`+name+`"`) {
						t.Fatalf("A's page %s lacks its own create: %s", page, got)
					}
				}
			}
		})
	}
}
