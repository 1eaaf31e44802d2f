package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// syncBuffer is a bytes.Buffer a logger may write to from many calls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.FieldsFunc(b.b.String(), func(r rune) bool { return r == '\n' })
}

// TestDeprecatedOperationIsLogged: the server marks getPet deprecated on
// every answer (Deprecation, Sunset and a successor Link); a program using
// the client learns it from one warning in its log per Client and
// operation, naming the dates and the successor, without its key.
func TestDeprecatedOperationIsLogged(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	var buf syncBuffer
	c := srv.Client(client.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	ctx := context.Background()
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}
	if l := buf.lines(); len(l) != 0 {
		t.Fatalf("listPets, not deprecated, logged %q", l)
	}
	var wg sync.WaitGroup
	for id := range 5 { // found or not: every routed answer is marked
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.GetPet(ctx, int64(id))
		}()
	}
	wg.Wait()
	lines := buf.lines()
	if len(lines) != 1 {
		t.Fatalf("%d log lines after 5 GetPets, want 1: %q", len(lines), lines)
	}
	var rec struct {
		Level, Msg, Operation, Successor string
		Deprecation, Sunset              time.Time
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Level != "WARN" || rec.Operation != "getPet" || rec.Successor != "/v1/pets" ||
		!rec.Deprecation.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !rec.Sunset.Equal(time.Date(2030, 12, 5, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("logged %s", lines[0])
	}
	if strings.Contains(lines[0], srv.Key()) {
		t.Fatal("the log line shows the API key")
	}

	// Another Client (a program that makes one per job, say) warns again.
	var other syncBuffer
	c2 := srv.Client(client.WithLogger(slog.New(slog.NewJSONHandler(&other, nil))))
	if _, err := c2.GetPet(ctx, 1); err != nil || len(other.lines()) != 1 {
		t.Fatalf("a second client: %v, log %q", err, other.lines())
	}
}

// TestDeprecationLogCutsWholeCharacters: header values the warning logs as
// the server sent them are cut at 200 bytes, never inside a UTF-8
// character, so the line a log pipeline gets is valid UTF-8 and shows the
// start of what the server said.
func TestDeprecationLogCutsWholeCharacters(t *testing.T) {
	t.Parallel()
	long := "x" + strings.Repeat("é", 150) // 301 bytes: byte 200 is inside an é
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Deprecation", long)
		w.Header().Set("Link", "</v1/"+long+`>; rel="successor-version"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":1,"name":"Rex","categoryId":1,"status":"available"}`)
	}))
	t.Cleanup(api.Close)
	var mu sync.Mutex
	logged := map[string]string{}
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		mu.Lock()
		defer mu.Unlock()
		logged[a.Key] = a.Value.String()
		return a
	}}))
	c, err := client.New(api.URL+"/v1", "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()), client.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPet(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for key, sent := range map[string]string{"deprecation": long, "successor": "/v1/" + long} {
		got := logged[key]
		cut, ok := strings.CutSuffix(got, "…")
		if !utf8.ValidString(got) || !ok || !strings.HasPrefix(sent, cut) || len(cut) > 200 || len(cut) < 199 {
			t.Errorf("%s logged as %q (%d bytes), want the first whole characters of %d bytes that fit in 200, then …", key, got, len(got), len(sent))
		}
	}
}
