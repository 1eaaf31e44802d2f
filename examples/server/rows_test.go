package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rawGet sends a request line exactly as given (http.Client would clean
// the path), with the given header lines, to the server at base and
// returns the response and its body.
func rawGet(t *testing.T, base, target string, headers ...string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", target)
	for _, h := range headers {
		fmt.Fprintf(conn, "%s\r\n", h)
	}
	fmt.Fprint(conn, "\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// Paths at and around the API base are the API's to answer, never the
// standard mux's HTML redirect: with a key, a JSON 404 that says what to
// write instead; without one, the 401 any unknown path gets. Either has a
// request id and an access log line.
func TestPathsAroundBaseAreJSON(t *testing.T) {
	t.Parallel()
	srv := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", planKey + ":pro"}, nil)
	for _, target := range []string{"/v1", "//v1/pets", "/v1/./pets", "/v1/../x", "/v1//pets", "/v1/pets/../pets"} {
		t.Run(target, func(t *testing.T) {
			for _, tc := range []struct {
				auth []string
				want int
				code string
			}{
				{[]string{"Authorization: Bearer " + planKey}, http.StatusNotFound, "not_found"},
				{nil, http.StatusUnauthorized, "unauthorized"},
			} {
				res, body := rawGet(t, srv.base, target, tc.auth...)
				var e struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				}
				if res.StatusCode != tc.want || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
					json.Unmarshal([]byte(body), &e) != nil || e.Code != tc.code {
					t.Fatalf("GET %s (%d header lines): %d %s %s, want a JSON %s Error", target, len(tc.auth), res.StatusCode, res.Header.Get("Content-Type"), body, tc.code)
				}
				id := res.Header.Get("X-Request-Id")
				if id == "" {
					t.Fatalf("GET %s: no X-Request-Id", target)
				}
				if tc.want == http.StatusNotFound && !strings.Contains(e.Message, "/v1/") {
					t.Fatalf("GET %s: message %q does not say which path to use", target, e.Message)
				}
				until(t, 5*time.Second, "an access log line for "+target, func() bool { return strings.Contains(srv.logs.String(), id) })
			}
		})
	}
	// Clean paths still work.
	if res, body := rawGet(t, srv.base, "/v1/openapi.json"); res.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", res.StatusCode, body)
	}
}

// A start that cannot listen creates no demo key; the next one that can
// creates it and prints it, so the key is never stored unseen.
func TestDemoKeyWaitsForTheListener(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "petstore.db")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	out, err := runCmd(t, "-addr", busy.Addr().String(), "-db", db)
	if err == nil {
		t.Fatalf("listening on a busy port succeeded:\n%s", out)
	}
	if strings.Contains(out, "demo API key") {
		t.Fatalf("demo key printed although the server never listened:\n%s", out)
	}
	base, printed := start(t, []string{"-addr", "127.0.0.1:0", "-db", db}, nil)
	m := demoKeyRE.FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no demo key printed at the first start that listened:\n%s", strings.Join(printed, "\n"))
	}
	if status, _, body := call(t, "GET", base+"/v1/pets", m[1], "", ""); status != 200 {
		t.Fatalf("demo key: %d %s", status, body)
	}
}

// -h succeeds and lists every subcommand; a subcommand's -h prints its
// own usage; the server's flags may follow the subcommand.
func TestUsageAndSubcommandFlags(t *testing.T) {
	out, err := runCmd(t, "-h")
	if err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, sc := range subcommands {
		if !regexp.MustCompile(`(?m)^\s+server \[flags\] ` + sc.name + ` `).MatchString(out) {
			t.Errorf("-h does not list the %s subcommand:\n%s", sc.name, out)
		}
	}
	if !strings.Contains(out, "-platform-hosts") {
		t.Errorf("-h lists no flags:\n%s", out)
	}
	if out, err = runCmd(t, "keys", "-h"); err != nil || !strings.Contains(out, "keys create") || strings.Contains(out, "-platform-hosts") {
		t.Fatalf("keys -h (err %v) must print the keys usage only:\n%s", err, out)
	}

	db := "sqlite:" + filepath.Join(t.TempDir(), "keys.db")
	if out, err = runCmd(t, "keys", "create", "-plan", "business", "-db", db); err != nil {
		t.Fatalf("keys create with -db after it: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`id:\s+(key_\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("keys create printed no id:\n%s", out)
	}
	if out, err = runCmd(t, "keys", "list", "-db="+db); err != nil || !strings.Contains(out, id[1]) || !strings.Contains(out, "business") {
		t.Fatalf("keys list -db=... (err %v) does not show the key created in that database:\n%s", err, out)
	}
	if out, err = runCmd(t, "-db", db, "keys", "list"); err != nil || !strings.Contains(out, id[1]) {
		t.Fatalf("flags before the subcommand (err %v):\n%s", err, out)
	}
}

// A Host the platform does not know gets a 404 saying how to serve it.
func TestUnknownHostSaysHowToServeIt(t *testing.T) {
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", planKey + ":pro"}, nil)
	status, hdr, body := call(t, "GET", base+"/v1/pets", "k", "api.example.net", "")
	if status != 404 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") ||
		!strings.Contains(body, "api.example.net") || !strings.Contains(body, "-platform-hosts") {
		t.Fatalf("unknown Host: %d %s, want a JSON 404 naming the host and -platform-hosts", status, body)
	}
}
