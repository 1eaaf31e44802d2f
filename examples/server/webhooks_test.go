package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/webhook"
)

// A project registers a webhook receiver from the dashboard API. A
// receiver on loopback is refused unless the server runs with
// -webhook-allow-private, as tests do.
func TestWebhookEndpointsFlag(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer rcv.Close()
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	body := `{"url":"` + rcv.URL + `/hook"}`

	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", key + ":pro"}, nil)
	status, _, got := call(t, "POST", base+"/dashboard/api/webhooks", key, "", body)
	if status != http.StatusBadRequest || !strings.Contains(got, "not a public address") || !strings.Contains(got, `"invalid_request"`) {
		t.Fatalf("loopback receiver without the flag: %d %s; want 400 invalid_request", status, got)
	}

	base, _ = start(t, []string{"-addr", "127.0.0.1:0", "-keys", key + ":pro"}, map[string]string{"PETSTORE_WEBHOOK_ALLOW_PRIVATE": "true"})
	status, _, got = call(t, "POST", base+"/dashboard/api/webhooks", key, "", body)
	var created struct{ ID, URL, Secret string }
	if err := json.Unmarshal([]byte(got), &created); status != http.StatusCreated || err != nil || created.URL != rcv.URL+"/hook" || !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("with the flag: %d %s", status, got)
	}
	status, _, got = call(t, "GET", base+"/dashboard/api/webhooks/"+created.ID+"/deliveries", key, "", "")
	if status != http.StatusOK || !strings.Contains(got, `"deliveries": []`) && !strings.Contains(got, `"deliveries":[]`) {
		t.Fatalf("deliveries: %d %s", status, got)
	}
	bad := func(k string) string { return map[string]string{"PETSTORE_WEBHOOK_ALLOW_PRIVATE": "maybe"}[k] }
	if _, err := parseConfig(nil, bad, io.Discard); err == nil || !strings.Contains(err.Error(), "PETSTORE_WEBHOOK_ALLOW_PRIVATE") {
		t.Fatalf("PETSTORE_WEBHOOK_ALLOW_PRIVATE=maybe: %v, want an error naming the variable", err)
	}
	if cfg, err := parseConfig([]string{"-webhook-allow-private"}, bad, io.Discard); err != nil || !cfg.webhookAllowPrivate {
		t.Fatalf("-webhook-allow-private over a bad variable: %+v, %v; want the flag to win", cfg.webhookAllowPrivate, err)
	}
}

// The Webhooks panel of the dashboard page: add an endpoint, see its
// secret once, see it listed with no deliveries yet, roll its secret
// (the new one shown once, the old one's end listed), delete it.
func TestWebhooksInBrowser(t *testing.T) {
	ctx := newBrowser(t, 45*time.Second)
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", key + ":pro", "-webhook-allow-private"}, nil)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer rcv.Close()
	// The browser starts on ctx, not on the first step's shorter one.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			// What the page shows says which part never came: the
			// alert holds a failed call's error.
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({alert: document.querySelector("#alert").textContent, open: document.querySelector("#hooks-details").open})`))
			t.Fatalf("%s: %v; the page shows %s", what, err, shown)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	step("sign in",
		chromedp.Navigate(base+"/dashboard/"),
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		// The domains list loads after the panels appear and moves the
		// Webhooks summary down; a click aimed before it moved misses.
		chromedp.WaitVisible(chromedp.CSS("#empty")),
		chromedp.Click(chromedp.CSS("#hooks-details > summary")),
		chromedp.WaitVisible(chromedp.CSS("#hooks-empty")),
	)
	step("add an endpoint",
		chromedp.SendKeys(chromedp.CSS("#hook-url"), rcv.URL+"/hook"),
		chromedp.Click(chromedp.CSS("#hook-add")),
		chromedp.WaitVisible(chromedp.CSS("#hook-secret code")),
		chromedp.WaitVisible(chromedp.CSS("#hooks li")),
	)
	if got := text("#hook-secret code"); !strings.HasPrefix(got, "whsec_") {
		t.Fatalf("secret shown: %q", got)
	}
	if got := text("#hooks li .hook-head code"); got != rcv.URL+"/hook" {
		t.Fatalf("listed endpoint %q", got)
	}
	step("open its deliveries",
		chromedp.Click(chromedp.CSS("#hooks li summary")),
		chromedp.WaitVisible(chromedp.CSS("#hooks li .deliveries p")),
	)
	if got := text("#hooks li .deliveries p"); got != "No deliveries yet." {
		t.Fatalf("deliveries say %q", got)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.confirm = () => true; true`)); err != nil {
		t.Fatal(err)
	}
	first := text("#hook-secret code")
	step("roll its secret",
		chromedp.Click(chromedp.CSS(`#hooks li button[aria-label^="Roll the signing secret"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#hook-secret code").textContent !== `+strconv.Quote(first)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#hooks li .help").textContent.includes("previous secret valid until")`),
	)
	if got := text("#hook-secret code"); !strings.HasPrefix(got, "whsec_") {
		t.Fatalf("rolled secret shown: %q", got)
	}
	if got := text("#hook-secret"); !strings.Contains(got, "The old one stays valid until") {
		t.Fatalf("after the roll the page says %q", got)
	}
	step("delete it",
		chromedp.Click(chromedp.CSS("#hooks li .danger-outline")),
		chromedp.WaitVisible(chromedp.CSS("#hooks-empty")),
	)
}

// A domain added from the dashboard reaches the project's webhook
// receiver as a signed domain.added event carrying the dashboard's view of
// the domain: the engine's events and the webhook outbox are wired.
func TestDomainEventsReachWebhooks(t *testing.T) {
	type delivery struct {
		header string
		body   []byte
	}
	got := make(chan delivery, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Get("Petstore-Signature"), b}
	}))
	defer rcv.Close()
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", key + ":pro", "-webhook-allow-private"}, nil)
	status, _, out := call(t, "POST", base+"/dashboard/api/webhooks", key, "", `{"url":"`+rcv.URL+`"}`)
	var created struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(out), &created); status != http.StatusCreated || err != nil {
		t.Fatalf("register the receiver: %d %s", status, out)
	}
	if status, _, out := call(t, "POST", base+"/dashboard/api/domains", key, "", `{"name":"shop.example.test"}`); status != http.StatusCreated {
		t.Fatalf("add a domain: %d %s", status, out)
	}
	select {
	case d := <-got:
		if err := webhook.VerifyWebhook(created.Secret, d.header, d.body, time.Minute); err != nil {
			t.Fatalf("the delivery's signature: %v (header %q)", err, d.header)
		}
		var ev struct {
			ID, Type string
			Data     struct {
				Domain struct{ Name, Status string }
			}
		}
		if err := json.Unmarshal(d.body, &ev); err != nil || ev.Type != "domain.added" || ev.Data.Domain.Name != "shop.example.test" || !strings.HasPrefix(ev.ID, "evt_") {
			t.Fatalf("delivery %s (%v); want a domain.added event for shop.example.test", d.body, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery within 20 s of adding the domain")
	}
}

// TestDomainEventWaitsNoLongerThanTheDatabaseTimeout: the engine queues a
// domain's webhook event from the request that changed it, apart from
// that request's cancellation; with the database paused, queuing gives up
// at the request's deadline, or after -db-timeout when it has none, and
// says so (the event waits in the domain's entry for the background
// loop), rather than holding the request until the database is back.
func TestDomainEventWaitsNoLongerThanTheDatabaseTimeout(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	ctx := context.Background()
	db, err := bunopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Restore(); db.Close() })
	if err := bunstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	hooks, err := startWebhooks(t.Context(), config{webhookAllowPrivate: true}, bunstore.New(db), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.CreateEndpoint(ctx, "prj_a", "https://hooks.example.com/a"); err != nil {
		t.Fatal(err)
	}
	proxy.Pause()

	withDeadline, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
	}{
		{"the request's deadline", withDeadline, time.Minute},
		{"-db-timeout without one", ctx, time.Second},
	} {
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			ev := customdomain.PendingEvent{ID: "evt_" + tc.name, Type: "domain.added", CreatedAt: start, Domain: []byte(`{"name":"a.example.com"}`)}
			done <- domainEvents{hooks, tc.timeout}.DomainEvent(tc.ctx, "prj_a", ev)
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: DomainEvent says it queued the event with the database paused", tc.name)
			}
		case <-time.After(10 * time.Second): // a hang guard, far past the bound
			t.Fatalf("%s: DomainEvent still waits 10 s into a database pause, with a 1 s bound", tc.name)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("%s: DomainEvent took %v with a 1 s bound and the database paused", tc.name, took)
		}
	}
}
