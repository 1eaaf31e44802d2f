package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
