package testenv

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Buffer collects a log written from other goroutines (a process's
// output, a logger) and can be read while it is written.
//
// Text written by another goroutine or process is not there the moment
// something else is observed: a process's standard error is read apart
// from its standard output, so a line it wrote to stderr before a line
// on stdout may still be in the pipe when the stdout line arrives. To
// assert on a Buffer, wait for the outcome: WaitFor a text that must
// come, or, to see that something never came, for the writer to have
// finished (Process.Stop closes its buffers once the process has exited
// and its output is read to the end).
type Buffer struct {
	mu      sync.Mutex
	b       strings.Builder
	closed  bool
	changed chan struct{} // closed, and replaced, at every Write and at Close
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.b.Write(p)
	b.wakeLocked()
	return n, err
}

// Close records that nothing more will be written; WaitFor then stops
// waiting. Writing after Close still appends.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.wakeLocked()
	return nil
}

func (b *Buffer) wakeLocked() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor waits until the text written so far contains substr and returns
// that text. It fails tb if the Buffer is closed without it, or after a
// minute.
func (b *Buffer) WaitFor(tb testing.TB, substr string) string {
	tb.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		text, closed := b.b.String(), b.closed
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		switch {
		case strings.Contains(text, substr):
			return text
		case closed:
			tb.Fatalf("%q was never written; all there was:\n%s", substr, text)
		}
		select {
		case <-changed:
		case <-timeout.C:
			tb.Fatalf("%q not written within a minute; so far:\n%s", substr, text)
		}
	}
}

// Build compiles the Go main package pkg (a path as "go build" takes it)
// into a binary in a temporary directory and returns the binary's path.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	return compile(tb, pkg, tb.TempDir())
}

// Builds compiles each main package once for a whole test binary, so
// that the tests starting the same program share one binary where Build
// links it anew for each (over a second a link). The zero value is
// ready; call Remove from TestMain once m.Run has returned.
type Builds struct {
	mu   sync.Mutex
	dir  string            // the binaries' directory, made at the first Build
	bins map[string]string // by the package's absolute path
}

// Build returns the binary of the Go main package pkg, compiled at the
// first call for pkg. It is safe for parallel tests.
func (b *Builds) Build(tb testing.TB, pkg string) string {
	tb.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if bin, ok := b.bins[abs]; ok {
		return bin
	}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "testenv-builds-"); err != nil {
			tb.Fatal(err)
		}
		b.bins = map[string]string{}
	}
	dir := filepath.Join(b.dir, strconv.Itoa(len(b.bins))) // one each, as binaries are named after their package
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	b.bins[abs] = compile(tb, pkg, dir)
	return b.bins[abs]
}

// Remove deletes the binaries Build compiled.
func (b *Builds) Remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
	b.dir, b.bins = "", nil
}

// compile builds pkg into dir, named after the package as "go build"
// names it, and returns the binary's path.
func compile(tb testing.TB, pkg, dir string) string {
	tb.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(abs))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Process is a program started by StartListening.
type Process struct {
	// Addr is the first word after "listening on " in the line the
	// program announced itself with.
	Addr string
	// Stdout and Stderr collect the program's standard output and, unless
	// cmd.Stderr was set, standard error. They are read apart: use
	// WaitFor, or Stop first, before asserting on them.
	Stdout, Stderr *Buffer

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process exited and its output is read
}

// StartListening starts cmd and waits, up to a minute, for a line of its
// standard output containing "listening on ". At cleanup (or Stop) the
// process gets SIGTERM, as in production, and is killed if it has not
// exited 20 seconds later.
func StartListening(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &Process{Stdout: &Buffer{}, Stderr: &Buffer{}, cmd: cmd, exited: make(chan struct{})}
	if cmd.Stderr == nil {
		cmd.Stderr = p.Stderr
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.Stdout.Write(append(sc.Bytes(), '\n'))
			if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					addrs <- f[0]
					break
				}
			}
		}
		// Keep reading, so the process never blocks on a full pipe.
		_, _ = io.Copy(p.Stdout, stdout)
		// Wait returns once stderr, too, is read to the end.
		_ = cmd.Wait()
		p.Stdout.Close()
		p.Stderr.Close()
		close(p.exited)
	}()
	select {
	case p.Addr = <-addrs:
		return p
	case <-p.exited:
		select {
		case p.Addr = <-addrs: // announced, then exited at once: the caller's requests will say so
			return p
		default:
		}
		tb.Fatalf("%s exited before listening: %s", filepath.Base(cmd.Path), p.Stderr)
	case <-time.After(time.Minute):
		tb.Fatalf("%s did not listen within a minute: %s", filepath.Base(cmd.Path), p.Stderr)
	}
	return nil
}

// Stop sends the process SIGTERM and waits until it has exited (killing it
// after 20 seconds) and its output is read to the end: Stdout and Stderr
// then hold everything it wrote. Stopping again does nothing.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
