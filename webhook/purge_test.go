package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/webhook"
)

// callLog is a webhook.Store that forwards every call to the store it
// wraps and records, in order, each claim (with how many it leased) and
// each purge.
type callLog struct {
	webhook.Store

	mu    sync.Mutex
	calls []string
}

func (l *callLog) ClaimWebhookDeliveries(ctx context.Context, token string, now, leaseUntil time.Time, limit, perEndpoint int) ([]webhook.Due, error) {
	dues, err := l.Store.ClaimWebhookDeliveries(ctx, token, now, leaseUntil, limit, perEndpoint)
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprint("claim ", len(dues)))
	l.mu.Unlock()
	return dues, err
}

func (l *callLog) PurgeWebhookDeliveries(ctx context.Context, now, before time.Time) (int, error) {
	l.mu.Lock()
	l.calls = append(l.calls, "purge")
	l.mu.Unlock()
	return l.Store.PurgeWebhookDeliveries(ctx, now, before)
}

// TestRunPurgesWhileABacklogLasts: Run's hourly purge, which deletes old
// finished deliveries and erases rolled secrets whose overlap has ended,
// runs while deliveries keep being due, not only once the worker finds
// nothing to send: a backlog that lasts hours (a slow database, a
// receiver that hangs) would otherwise keep an ended secret in the
// store for as long.
func TestRunPurgesWhileABacklogLasts(t *testing.T) {
	ctx := context.Background()
	clock := start()
	store := &callLog{Store: memstore.New()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	svc := newService(t, webhook.Config{Store: store, AllowPrivate: true, Now: clock.Now, PollInterval: time.Hour})
	var eps []webhook.Endpoint
	for i := range 9 {
		ep, err := svc.CreateEndpoint(ctx, "prj_a", fmt.Sprint(srv.URL, "/", i))
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	const events = 8 // 72 deliveries: three claims of 32 at most
	for range events {
		if err := svc.Enqueue(ctx, "prj_a", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(runCtx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		done := true
		for _, ep := range eps {
			done = done && allSucceeded(t, svc, "prj_a", ep.ID, events)()
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("not every delivery succeeded within 10 s")
		}
	}
	stop()
	<-ran
	store.mu.Lock()
	defer store.mu.Unlock()
	lastBusy := -1
	for i, c := range store.calls {
		if c != "claim 0" && c != "purge" {
			lastBusy = i
		}
	}
	if first := slices.Index(store.calls, "purge"); first < 0 || first > lastBusy {
		t.Fatalf("calls %q: the first purge came after the backlog was sent, want it while the claims still found deliveries", store.calls)
	}
}
