// Package logbuf is a buffered writer for log output, so that the access
// log costs a memory copy per request rather than a write system call.
// slog's handlers write each record with one Write call, so lines are
// never split; the buffer is written out on a short interval, whenever it
// grows past a threshold, on Flush, and on Close.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// DefaultInterval is how long a line may wait in the buffer by default.
const DefaultInterval = 100 * time.Millisecond

// flushAt is the buffered size past which a Write flushes at once, so a
// burst of lines never holds much memory or waits for the ticker.
const flushAt = 64 << 10

// Writer buffers writes to an underlying writer. It is safe for
// concurrent use. A write error of the underlying writer is returned by
// the next Write, Flush or Close, once.
type Writer struct {
	mu   sync.Mutex
	out  io.Writer
	buf  []byte
	err  error
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a Writer over out that flushes every interval (0 means
// DefaultInterval). Close it to stop its flusher and write what is left.
func New(out io.Writer, interval time.Duration) *Writer {
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &Writer{out: out, buf: make([]byte, 0, 8<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(interval)
	return w
}

func (w *Writer) loop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = w.Flush()
		case <-w.stop:
			return
		}
	}
}

// Write buffers p. It never blocks on the underlying writer unless the
// buffer is past its threshold.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) >= flushAt {
		w.flushLocked()
	}
	if err := w.err; err != nil {
		w.err = nil
		return len(p), err
	}
	return len(p), nil
}

// Flush writes out everything buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.out.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
	if cap(w.buf) > 4*flushAt {
		w.buf = make([]byte, 0, 8<<10) // let a one-off burst's memory go
	} else {
		w.buf = w.buf[:0]
	}
}

// Close stops the periodic flush and writes out what is left. Writes
// after Close still reach the underlying writer on Flush.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.Flush()
}
