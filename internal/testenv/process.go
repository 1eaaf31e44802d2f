package testenv

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Buffer collects a log written from other goroutines (a process's
// output, a logger) and can be read while it is written.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Build compiles the Go main package pkg (a path as "go build" takes it)
// into a binary in a temporary directory and returns the binary's path.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tb.TempDir(), filepath.Base(abs))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// StartListening starts cmd and waits, up to a minute, for a line of its
// standard output containing "listening on "; it returns the first word
// after that, the address the program announced. Unless cmd.Stderr is set,
// standard error is collected in the returned Buffer, which failures
// print. At cleanup the process gets SIGTERM, as in production, and is
// killed if it has not exited 20 seconds later.
func StartListening(tb testing.TB, cmd *exec.Cmd) (addr string, stderr *Buffer) {
	tb.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stderr = &Buffer{}
	if cmd.Stderr == nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					addrs <- f[0]
					break
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // keep the process from blocking on a full pipe
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case addr := <-addrs:
		return addr, stderr
	case <-exited:
		select {
		case addr := <-addrs: // announced, then exited at once: the caller's requests will say so
			return addr, stderr
		default:
		}
		tb.Fatalf("%s exited before listening: %s", filepath.Base(cmd.Path), stderr)
	case <-time.After(time.Minute):
		tb.Fatalf("%s did not listen within a minute: %s", filepath.Base(cmd.Path), stderr)
	}
	return "", nil
}
