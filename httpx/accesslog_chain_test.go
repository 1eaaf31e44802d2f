package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/httpx"
)

// A request's line reaches Config.AccessLog, not Logger, with what the
// request was: the route, never the query, the key's id, never its secret.
func TestAccessLogReceivesEveryRequest(t *testing.T) {
	var lines, logs bytes.Buffer
	e := newEnv(t, func(c *httpx.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.AccessLog = httpx.NewJSONAccessLog(&lines)
	})
	r := e.req("GET", "/v1/pets?limit=5&status=available", "")
	r.Header.Set("User-Agent", "fetcher/2")
	res := e.do(t, r)
	if res.Status != http.StatusOK {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	e.do(t, httptest.NewRequest("GET", "/v1/pets", nil)) // no key: 401
	got := strings.Split(strings.TrimSpace(lines.String()), "\n")
	if len(got) != 2 {
		t.Fatalf("%d access log lines, want 2:\n%s", len(got), lines.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(got[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got[1]), &second); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"msg": "request", "level": "INFO", "method": "GET", "route": "GET /v1/pets", "path": "/v1/pets",
		"status": float64(200), "user_agent": "fetcher/2", "key_id": e.key.ID,
		"request_id": res.Header.Get("X-Request-Id"),
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v in %s", k, first[k], v, got[0])
		}
	}
	if second["status"] != float64(401) || second["key_id"] != nil {
		t.Errorf("the keyless request's line: %s", got[1])
	}
	if strings.Contains(lines.String(), "limit=5") || strings.Contains(lines.String(), e.secret) {
		t.Errorf("the access log holds the query or the key:\n%s", lines.String())
	}
	if strings.Contains(logs.String(), `"msg":"request"`) {
		t.Errorf("Logger got the access log too:\n%s", logs.String())
	}
}

// The access log writers format the line slog's handlers would; in a
// server, give them the buffered writer the other logs go through and
// set Config.AccessLog.
func ExampleNewTextAccessLog() {
	log := httpx.NewTextAccessLog(os.Stdout)
	log.LogRequest(context.Background(), &httpx.RequestLog{
		Time:   time.Date(2026, 11, 25, 17, 4, 30, 123456789, time.UTC),
		Client: netip.MustParseAddr("203.0.113.7"), Method: "GET", Route: "GET /v1/pets", Path: "/v1/pets",
		Status: 200, Bytes: 1223, Duration: 48250 * time.Nanosecond, UserAgent: "curl/8.5.0",
		RequestID: "01a213aa-7e73-7d29-80c6-c4e00508c21b", KeyID: "key_abc",
	})
	// Output:
	// time=2026-11-25T17:04:30.123Z level=INFO msg=request client=203.0.113.7 method=GET route="GET /v1/pets" path=/v1/pets status=200 bytes=1223 duration=48.25µs user_agent=curl/8.5.0 request_id=01a213aa-7e73-7d29-80c6-c4e00508c21b key_id=key_abc
}
