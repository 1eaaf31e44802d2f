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
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/webhook"
)

// Rolling a webhook secret through the dashboard API: the answer holds
// the new secret (not cached) and until when the old one stays valid (24
// hours without a body, what expiresInSeconds says otherwise); the list
// shows that time, never a secret; deliveries carry both signatures until
// then; bad bodies are invalid_request, another project's endpoint
// not_found. Every pair is checked against the OpenAPI document.
func TestDashboardRollWebhookSecret(t *testing.T) {
	ctx := context.Background()
	d := newHookDash(t, webhook.Config{})
	w, clock, hooks := d.w, d.clock, d.hooks
	call := func(key, method, path, ctype, body string) apitest.Response {
		t.Helper()
		return d.call(t, key, method, path, ctype, body)
	}

	var mu sync.Mutex
	var sigs []string
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sigs, bodies = append(sigs, r.Header.Get(webhook.SignatureHeader)), append(bodies, b)
		mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	// deliver sends an event and reports which of secrets its signature
	// verifies with.
	deliver := func(secrets ...string) []bool {
		t.Helper()
		if err := hooks.Enqueue(ctx, w.ProKey.ProjectID, webhook.TypeDomainAdded, map[string]string{"name": "shop.example.com"}); err != nil {
			t.Fatal(err)
		}
		if _, err := hooks.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		var ok []bool
		for _, s := range secrets {
			ok = append(ok, webhook.VerifyWebhook(s, sigs[len(sigs)-1], bodies[len(bodies)-1], 48*time.Hour) == nil)
		}
		return ok
	}

	res := call(w.Pro, "POST", apitest.DashAPI+"/webhooks", "application/json", `{"url":"`+rcv.URL+`"}`)
	var created struct {
		ID, URL, Secret         string
		PreviousSecretExpiresAt *time.Time
	}
	if err := json.Unmarshal(res.Body, &created); err != nil || res.Status != http.StatusCreated || created.PreviousSecretExpiresAt != nil {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	roll := apitest.DashAPI + "/webhooks/" + created.ID + "/roll-secret"

	// No body: the old secret stays valid for 24 hours.
	res = call(w.Pro, "POST", roll, "", "")
	var rolled struct {
		ID, URL, Secret         string
		PreviousSecretExpiresAt time.Time
	}
	if err := json.Unmarshal(res.Body, &rolled); err != nil || res.Status != http.StatusOK || res.Header.Get("Cache-Control") != "no-store" ||
		rolled.ID != created.ID || rolled.URL != created.URL || !strings.HasPrefix(rolled.Secret, "whsec_") || rolled.Secret == created.Secret ||
		!rolled.PreviousSecretExpiresAt.Equal(clock.Now().Add(24*time.Hour)) || strings.Contains(string(res.Body), created.Secret) {
		t.Fatalf("roll without a body: %d %v %s; want the new secret, the old one valid for 24 hours and not shown", res.Status, res.Header, res.Body)
	}
	res = call(w.Pro, "GET", apitest.DashAPI+"/webhooks", "", "")
	if res.Status != http.StatusOK || strings.Contains(string(res.Body), rolled.Secret) || strings.Contains(string(res.Body), created.Secret) ||
		!strings.Contains(string(res.Body), `"previousSecretExpiresAt":"`+rolled.PreviousSecretExpiresAt.Format(time.RFC3339)+`"`) {
		t.Fatalf("list during the overlap: %d %s; want the old secret's end, no secret", res.Status, res.Body)
	}
	if got := deliver(created.Secret, rolled.Secret); !got[0] || !got[1] {
		t.Fatalf("during the overlap the delivery verifies with (old, new) = %v, want both", got)
	}
	clock.Advance(24 * time.Hour)
	if got := deliver(created.Secret, rolled.Secret); got[0] || !got[1] {
		t.Fatalf("after the overlap the delivery verifies with (old, new) = %v, want the new only", got)
	}
	if res := call(w.Pro, "GET", apitest.DashAPI+"/webhooks", "", ""); strings.Contains(string(res.Body), "previousSecretExpiresAt") {
		t.Fatalf("list after the overlap: %s; want no old secret's end", res.Body)
	}

	// expiresInSeconds says how long; 0 ends the old secret now.
	res = call(w.Pro, "POST", roll, "application/json", `{"expiresInSeconds":3600}`)
	var hour struct {
		Secret                  string
		PreviousSecretExpiresAt time.Time
	}
	if err := json.Unmarshal(res.Body, &hour); err != nil || res.Status != http.StatusOK || !hour.PreviousSecretExpiresAt.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("roll for an hour: %d %s", res.Status, res.Body)
	}
	res = call(w.Pro, "POST", roll, "application/json", `{"expiresInSeconds":0}`)
	var now struct{ Secret string }
	if err := json.Unmarshal(res.Body, &now); err != nil || res.Status != http.StatusOK || strings.Contains(string(res.Body), "previousSecretExpiresAt") {
		t.Fatalf("roll with no overlap: %d %s; want no old secret's end", res.Status, res.Body)
	}
	if got := deliver(hour.Secret, now.Secret); got[0] || !got[1] {
		t.Fatalf("after a roll with no overlap the delivery verifies with (old, new) = %v, want the new only", got)
	}

	// Refusals change nothing.
	for _, tc := range []struct {
		key, path, ctype, body string
		status                 int
		code, says             string
	}{
		{w.Pro, roll, "application/json", `{"expiresInSeconds":-1}`, 400, petstore.CodeInvalidRequest, "from 0"},
		{w.Pro, roll, "application/json", `{"expiresInSeconds":604801}`, 400, petstore.CodeInvalidRequest, "604800"},
		{w.Pro, roll, "application/json", `{"expiresInSeconds":1.5}`, 400, petstore.CodeInvalidRequest, "whole number"},
		{w.Pro, roll, "application/json", `{"expiresInSeconds":"60"}`, 400, petstore.CodeInvalidRequest, "whole number"},
		{w.Pro, roll, "application/json", `[]`, 400, petstore.CodeInvalidRequest, "JSON object"},
		{w.Pro, roll, "application/json", `not json`, 400, petstore.CodeInvalidRequest, ""},
		{w.Pro, roll, "text/plain", `{"expiresInSeconds":60}`, 415, petstore.CodeUnsupportedMediaType, "application/json"},
		{w.Pro2, roll, "", "", 404, petstore.CodeNotFound, created.ID},
		{w.Pro, apitest.DashAPI + "/webhooks/wh_unknown/roll-secret", "", "", 404, petstore.CodeNotFound, "wh_unknown"},
	} {
		res := call(tc.key, "POST", tc.path, tc.ctype, tc.body)
		if e := res.ErrorBody(t); res.Status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
			t.Fatalf("POST %s %s (%s): %d %s; want %d %s saying %q", tc.path, tc.body, tc.ctype, res.Status, res.Body, tc.status, tc.code, tc.says)
		}
	}
	if got := deliver(now.Secret); !got[0] {
		t.Fatal("after the refused rolls the delivery does not verify with the last secret")
	}
	if res := call(w.Pro, "GET", roll, "", ""); res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Fatalf("GET roll-secret: %d Allow %q", res.Status, res.Header.Get("Allow"))
	}
}
