package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"

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

// errAttrs records the "err" of every log record as the handler gets it,
// before any handler quotes it: what a plain handler would write.
type errAttrs struct {
	mu   sync.Mutex
	errs []string
}

func (*errAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (h *errAttrs) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			h.mu.Lock()
			h.errs = append(h.errs, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}
func (h *errAttrs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errAttrs) WithGroup(string) slog.Handler      { return h }

// A receiver's garbled answer (a header line of terminal escapes, a bell,
// a bidi override and kilobytes more) reaches the failed delivery's log
// line only as printable characters, and briefly: the line once quoted a
// kilobyte of the receiver's raw bytes, which a handler that does not
// quote would write to the operator's terminal as they are.
func TestFailedDeliveryLogHoldsNoRawReceiverBytes(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	garbled := "HTTP/1.1 200 OK\r\n\x1b]0;owned\x07\x1b[2J\u202eno colon here " + strings.Repeat("\x1b[31mX", 500) + "\r\n\r\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					_, _ = c.Write([]byte(garbled))
				}
			}()
		}
	}()
	h := &errAttrs{}
	svc := newService(t, webhook.Config{Store: memstore.New(), AllowPrivate: true, Now: start().Now, Logger: slog.New(h)})
	if _, err := svc.CreateEndpoint(ctx, "prj_garbled", "http://"+ln.Addr().String()+"/hook"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Enqueue(ctx, "prj_garbled", webhook.TypeDomainActive, map[string]string{"name": "a.example.com"}); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, svc)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) == 0 {
		t.Fatal("nothing logged about the failed delivery")
	}
	for _, e := range h.errs {
		if len(e) > 256 {
			t.Errorf("a %d-byte err in the log, want at most 256: %.300q", len(e), e)
		}
		for _, r := range e {
			if !unicode.IsPrint(r) {
				t.Errorf("the log's err holds %U: %q", r, e)
				break
			}
		}
	}
}
