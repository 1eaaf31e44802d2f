package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx/dashboard"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/webhook"
)

// The webhook API end to end: a project registers a receiver, a domain
// event reaches it signed (after one failure, retried), the deliveries
// list shows both answers, and another project sees none of it. Every
// pair is checked against the dashboard's OpenAPI document.
func TestDashboardWebhooks(t *testing.T) {
	ctx := context.Background()
	d := newHookDash(t, webhook.Config{Jitter: func() float64 { return 0.5 }})
	w, clock, hooks := d.w, d.clock, d.hooks
	call := func(key, method, path, body string) apitest.Response {
		t.Helper()
		ctype := ""
		if body != "" {
			ctype = "application/json"
		}
		return d.call(t, key, method, path, ctype, body)
	}

	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		n := len(got)
		mu.Unlock()
		if n == 1 {
			http.Error(rw, "receiver restarting", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(rw, "thanks")
	}))
	defer rcv.Close()

	// Register.
	res := call(w.Pro, "POST", apitest.DashAPI+"/webhooks", `{"url":"`+rcv.URL+`/petstore"}`)
	if res.Status != http.StatusCreated || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %v %s", res.Status, res.Header, res.Body)
	}
	var created struct{ ID, URL, Secret string }
	if err := json.Unmarshal(res.Body, &created); err != nil || !strings.HasPrefix(created.ID, "wh_") || created.URL != rcv.URL+"/petstore" || !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("created %s (%v)", res.Body, err)
	}
	res = call(w.Pro, "GET", apitest.DashAPI+"/webhooks", "")
	if res.Status != 200 || !strings.Contains(string(res.Body), created.ID) || strings.Contains(string(res.Body), created.Secret) || strings.Contains(string(res.Body), "secret") {
		t.Fatalf("list: %d %s; want the endpoint, never its secret", res.Status, res.Body)
	}

	// Another project sees nothing of it and cannot touch it.
	if res := call(w.Pro2, "GET", apitest.DashAPI+"/webhooks", ""); res.Status != 200 || string(res.Body) != "{\"webhooks\":[]}\n" {
		t.Fatalf("another project's list: %d %q", res.Status, res.Body)
	}
	for _, m := range []string{"DELETE /webhooks/", "GET /webhooks/"} {
		method, path, _ := strings.Cut(m, " ")
		suffix := ""
		if method == "GET" {
			suffix = "/deliveries"
		}
		if res := call(w.Pro2, method, apitest.DashAPI+path+created.ID+suffix, ""); res.Status != http.StatusNotFound || res.ErrorBody(t).Code != petstore.CodeNotFound {
			t.Fatalf("%s by another project: %d %s", m, res.Status, res.Body)
		}
	}

	// Bad input.
	for _, tc := range []struct {
		body, ctype string
		status      int
		code, says  string
	}{
		{`{"url":"ftp://example.com/x"}`, "application/json", 400, petstore.CodeInvalidRequest, "http:// or https://"},
		{`{"url":"https://user:pw@example.com/"}`, "application/json", 400, petstore.CodeInvalidRequest, "user name or password"},
		{`{}`, "application/json", 400, petstore.CodeInvalidRequest, "url is required"},
		{`{"url":7}`, "application/json", 400, petstore.CodeInvalidRequest, "url"},
		{`not json`, "application/json", 400, petstore.CodeInvalidRequest, ""},
		{`{"url":"https://example.com/"}`, "text/plain", 415, petstore.CodeUnsupportedMediaType, "application/json"},
	} {
		req := httptest.NewRequest("POST", apitest.DashAPI+"/webhooks", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		req.Header.Set("Authorization", "Bearer "+w.Pro)
		res := apitest.DashboardDo(t, d.dash, req)
		if e := res.ErrorBody(t); res.Status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
			t.Fatalf("POST %s (%s): %d %s; want %d %s saying %q", tc.body, tc.ctype, res.Status, res.Body, tc.status, tc.code, tc.says)
		}
	}
	if res := call("", "GET", apitest.DashAPI+"/webhooks", ""); res.Status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", res.Status)
	}
	if es, _ := hooks.Endpoints(ctx, w.ProKey.ProjectID); len(es) != 1 {
		t.Fatalf("after the refused requests the project has %d endpoints, want 1: nothing half-written", len(es))
	}

	// A domain's state change reaches the receiver, as the dashboard
	// shows the domain.
	if res := call(w.Pro, "POST", apitest.DashAPI+"/domains", `{"name":"shop.example.com"}`); res.Status != http.StatusCreated {
		t.Fatalf("add domain: %d %s", res.Status, res.Body)
	}
	dom := call(w.Pro, "GET", apitest.DashAPI+"/domains/shop.example.com", "")
	if err := hooks.Enqueue(ctx, w.ProKey.ProjectID, webhook.TypeDomainAdded, json.RawMessage(dom.Body)); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	if _, err := hooks.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(bodies) != 2 || string(bodies[0]) != string(bodies[1]) {
		t.Fatalf("the receiver got %d deliveries, want the event twice, unchanged", len(bodies))
	}
	var ev struct {
		ID, Type string
		Data     struct {
			Domain struct{ Name, Status string }
		}
	}
	if err := json.Unmarshal(bodies[1], &ev); err != nil || ev.Type != "domain.added" || ev.Data.Domain.Name != "shop.example.com" || ev.Data.Domain.Status != "pending" {
		t.Fatalf("event %s (%v)", bodies[1], err)
	}
	if err := webhook.VerifyWebhook(created.Secret, got[1].Header.Get("Petstore-Signature"), bodies[1], time.Hour); err != nil {
		t.Fatalf("signature: %v", err)
	}
	mu.Unlock()

	res = call(w.Pro, "GET", apitest.DashAPI+"/webhooks/"+created.ID+"/deliveries", "")
	var list struct {
		Deliveries []struct {
			EventID, Type, State string
			Attempts             int
			Answers              []webhook.Answer
		}
	}
	if err := json.Unmarshal(res.Body, &list); err != nil || res.Status != 200 || len(list.Deliveries) != 1 {
		t.Fatalf("deliveries: %d %s (%v)", res.Status, res.Body, err)
	}
	dl := list.Deliveries[0]
	if dl.EventID != ev.ID || dl.Type != "domain.added" || dl.State != "succeeded" || dl.Attempts != 2 || len(dl.Answers) != 2 ||
		dl.Answers[0].StatusCode != 503 || dl.Answers[0].Body != "receiver restarting\n" || dl.Answers[1].StatusCode != 200 || dl.Answers[1].Body != "thanks" {
		t.Fatalf("deliveries: %s", res.Body)
	}

	// Delete.
	if res := call(w.Pro, "DELETE", apitest.DashAPI+"/webhooks/"+created.ID, ""); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if res := call(w.Pro, "DELETE", apitest.DashAPI+"/webhooks/"+created.ID, ""); res.Status != http.StatusNotFound {
		t.Fatalf("delete again: %d %s", res.Status, res.Body)
	}
	if res := call(w.Pro, "GET", apitest.DashAPI+"/webhooks/"+created.ID+"/deliveries", ""); res.Status != http.StatusNotFound {
		t.Fatalf("deliveries of a deleted endpoint: %d %s", res.Status, res.Body)
	}
	if res := call(w.Pro, "PUT", apitest.DashAPI+"/webhooks", `{}`); res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Fatalf("PUT /webhooks: %d Allow %q", res.Status, res.Header.Get("Allow"))
	}
}

// A dashboard without Webhooks answers its webhook paths not_found,
// saying why.
func TestDashboardWithoutWebhooks(t *testing.T) {
	w := apitest.NewWorld(t, memstore.New(), time.Now)
	for _, op := range [][2]string{
		{"GET", "/webhooks"},
		{"POST", "/webhooks"},
		{"DELETE", "/webhooks/wh_1"},
		{"GET", "/webhooks/wh_1/deliveries"},
		{"POST", "/webhooks/wh_1/roll-secret"},
	} {
		var body any
		if op[0] == "POST" && op[1] == "/webhooks" {
			body = map[string]string{"url": "https://hooks.example.com/"}
		}
		res := w.Call(t, w.Pro, op[0], apitest.DashAPI+op[1], body)
		if e := res.ErrorBody(t); res.Status != http.StatusNotFound || !strings.Contains(e.Message, "not enabled") {
			t.Fatalf("%s %s without Webhooks: %d %s", op[0], op[1], res.Status, res.Body)
		}
	}
}

// hookDash is a dashboard with webhooks on a memory store: its world, and
// the webhook service on a fake clock.
type hookDash struct {
	w     *apitest.World
	clock *testenv.Clock
	hooks *webhook.Service
	dash  http.Handler
}

// newHookDash builds one; cfg's Store, AllowPrivate and Now are set here.
func newHookDash(t *testing.T, cfg webhook.Config) *hookDash {
	store := memstore.New()
	d := &hookDash{w: apitest.NewWorld(t, store, time.Now), clock: testenv.NewClock(time.Now().UTC().Truncate(time.Second))}
	cfg.Store, cfg.AllowPrivate, cfg.Now = store, true, d.clock.Now
	var err error
	if d.hooks, err = webhook.New(cfg); err != nil {
		t.Fatal(err)
	}
	if d.dash, err = dashboard.New(dashboard.Config{Engine: d.w.Engine, Auth: petstore.NewKeys(store), Webhooks: d.hooks}); err != nil {
		t.Fatal(err)
	}
	return d
}

// call sends body, of type ctype, with key ("" for none, as for ctype
// and body).
func (d *hookDash) call(t *testing.T, key, method, path, ctype, body string) apitest.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return apitest.DashboardDo(t, d.dash, req)
}
