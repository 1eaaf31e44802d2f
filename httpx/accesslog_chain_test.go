package httpx_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/httpx"
)

// A request's line reaches Config.AccessLog, not Logger, with what the
// request was: the route, never the query, the key's id, never its secret.
func TestAccessLogReceivesEveryRequest(t *testing.T) {
	var lines, logs bytes.Buffer
	e := newEnv(t, func(c *httpx.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.AccessLog = slog.New(slog.NewJSONHandler(&lines, nil))
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
