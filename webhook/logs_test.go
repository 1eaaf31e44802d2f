package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/webhook"
)

// An endpoint deleted while its delivery is attempted gets no further
// attempt, and the log says so: it once said "the attempt will be made
// again", sending an operator after a retry that never comes.
func TestEndpointDeletedDuringAnAttemptIsNotSaidToBeTriedAgain(t *testing.T) {
	for name, store := range map[string]webhook.Store{
		"memstore":        memstore.New(),
		"bunstore-sqlite": openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "petstore.db"), bunstore.CallerClock()),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := start()
			var logs bytes.Buffer
			var mu sync.Mutex
			svc := newService(t, webhook.Config{Store: store, AllowPrivate: true, Now: clock.Now,
				Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			var id string
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := svc.DeleteEndpoint(r.Context(), "prj_deleted", id); err != nil {
					t.Errorf("DeleteEndpoint during the attempt: %v", err)
				}
				w.WriteHeader(http.StatusInternalServerError)
			}))
			t.Cleanup(rcv.Close)
			ep, err := svc.CreateEndpoint(ctx, "prj_deleted", rcv.URL+"/hook")
			if err != nil {
				t.Fatal(err)
			}
			id = ep.ID
			if err := svc.Enqueue(ctx, "prj_deleted", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
				t.Fatal(err)
			}
			deliverDue(t, svc)
			mu.Lock()
			out := logs.String()
			mu.Unlock()
			if strings.Contains(out, "made again") || !strings.Contains(out, "endpoint was deleted during the attempt; no further attempt is made") {
				t.Fatalf("log %q; want it to say the endpoint was deleted and no attempt follows", out)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
