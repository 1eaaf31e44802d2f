package logbuf_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/logbuf"
)

// lockedBuffer is the underlying writer, read while the flusher writes.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	wrote  chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	n, err := l.b.Write(p)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLinesArriveWholeAndInOrder(t *testing.T) {
	out := &lockedBuffer{wrote: make(chan struct{}, 1)}
	w := logbuf.New(out, time.Hour) // only Close flushes
	logger := slog.New(slog.NewTextHandler(w, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				logger.Info("request", "g", g, "i", i)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines, want 4000", len(lines))
	}
	next := map[string]int{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, " g="):], " g=%d i=%d", &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if want := next[fmt.Sprint(g)]; i != want {
			t.Fatalf("goroutine %d: line %d came where %d was due", g, i, want)
		}
		next[fmt.Sprint(g)]++
	}
	if out.writes > 4000/100 {
		t.Fatalf("%d writes for 4000 lines: not buffered", out.writes)
	}
}

func TestTickerFlushes(t *testing.T) {
	out := &lockedBuffer{wrote: make(chan struct{}, 1)}
	w := logbuf.New(out, 10*time.Millisecond)
	defer w.Close()
	fmt.Fprintln(w, "hello")
	<-out.wrote // the ticker, not Close, wrote it
	if got := out.String(); got != "hello\n" {
		t.Fatalf("got %q", got)
	}
}

type failing struct{}

func (failing) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorIsReported(t *testing.T) {
	w := logbuf.New(failing{}, time.Hour)
	fmt.Fprintln(w, "x")
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the underlying error", err)
	}
}
