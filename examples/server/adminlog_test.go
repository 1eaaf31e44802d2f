package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestAdminEndpointLogsThroughTheServersLog: the operator endpoint logs
// as the API does, through the server's log in its -log-format, each
// line carrying the request's id, which the answer names in
// X-Request-Id (the caller's own when it sent a sane one): a request's
// access line, and why it failed. Before, the endpoint gave no request
// id, wrote no access line, and its failures went to Go's default
// logger, as text on stderr whatever -log-format said.
func TestAdminEndpointLogsThroughTheServersLog(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "1s", "-start-timeout", "30s", "-log-format", "json",
		"-keys", freeKey + ":free", "-admin-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`operator endpoint at http://(\S+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	admin := "http://" + m[1] + "/admin/"

	for _, tc := range []struct {
		name, sent string // the X-Request-Id sent; "": none
		pause      bool
		status     int
		failure    bool // a line saying why, besides the access line
	}{
		{"served", "admin-log-served", false, 200, false},
		{"paused database", "admin-log-paused", true, 503, true},
		{"no id sent", "", false, 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pause {
				proxy.Pause()
				defer proxy.Restore()
			}
			path, route := "bans", "GET /admin/bans"
			if tc.pause {
				// reads the keys from the database
				path, route = "keys/key_nosuch/usage", "GET /admin/keys/{id}/usage"
			}
			req, _ := http.NewRequest("GET", admin+path, nil)
			if tc.sent != "" {
				req.Header.Set("X-Request-Id", tc.sent)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("GET /admin/%s: %d, want %d", path, res.StatusCode, tc.status)
			}
			id := res.Header.Get("X-Request-Id")
			if id == "" || tc.sent != "" && id != tc.sent {
				t.Fatalf("X-Request-Id %q, want %q (or a new one when none was sent)", id, tc.sent)
			}
			waitLog(t, s, `"request_id":"`+id+`"`)
			var access, failure bool
			for _, line := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
				var l map[string]any
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("a log line that is not JSON with -log-format json: %q", line)
				}
				if l["request_id"] != id {
					continue
				}
				switch {
				case l["msg"] == "request":
					access = true
					if l["status"] != float64(tc.status) || l["path"] != "/admin/"+path || l["route"] != route {
						t.Errorf("access line %s, want status %d, path /admin/%s and route %s", line, tc.status, path, route)
					}
				case l["level"] == "WARN" || l["level"] == "ERROR":
					failure = true
				}
			}
			if !access || failure != tc.failure {
				t.Fatalf("request %s: access line %v, failure line %v (want true, %v) in the log:\n%s", id, access, failure, tc.failure, s.logs.String())
			}
		})
	}
}
