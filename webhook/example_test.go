package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore/webhook"
)

// A receiver checks each delivery's signature against the raw body
// before it trusts it, and deduplicates by the event's id, which a retry
// keeps.
func ExampleVerifyWebhook() {
	const secret = "whsec_shown_once_when_the_endpoint_was_created"
	var seen sync.Map // event ids handled: a retry repeats one, and deliveries arrive concurrently
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.VerifyWebhook(secret, r.Header.Get(webhook.SignatureHeader), body, 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Domain struct {
					Name string `json:"name"`
				} `json:"domain"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		if _, dup := seen.LoadOrStore(ev.ID, true); !dup {
			fmt.Println(ev.Type, ev.Data.Domain.Name)
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// What the platform sends, twice (a retry), then a forgery.
	body := `{"id":"evt_1","type":"domain.active","createdAt":"2026-11-26T09:00:00Z","data":{"domain":{"name":"shop.example.com"}}}`
	send := func(sig string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/petstore", strings.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, sig)
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(send(webhook.Sign(secret, time.Now(), []byte(body))))
	fmt.Println(send(webhook.Sign(secret, time.Now(), []byte(body))))
	fmt.Println(send(webhook.Sign("whsec_someone_else", time.Now(), []byte(body))))
	// Output:
	// domain.active shop.example.com
	// 204
	// 204
	// 400
}
