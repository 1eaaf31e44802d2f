package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/faultproxy"
)

// echoServer is a real TCP server on loopback that answers every line with
// the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends line through c and returns the answer.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	s, err := r.ReadString('\n')
	return strings.TrimSuffix(s, "\n"), err
}

func dial(t *testing.T, p *faultproxy.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

func TestForwards(t *testing.T) {
	p := faultproxy.Start(t, echoServer(t))
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q, want loopback", p.Addr())
	}
	c, r := dial(t, p)
	for _, s := range []string{"hello", strings.Repeat("x", 100_000)} {
		if got, err := roundTrip(t, c, r, s); err != nil || got != s {
			t.Fatalf("echo of %d bytes: %d bytes, %v", len(s), len(got), err)
		}
	}
}

func TestCutThenRestore(t *testing.T) {
	p := faultproxy.Start(t, echoServer(t))
	c, r := dial(t, p)
	if _, err := roundTrip(t, c, r, "before"); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if _, err := roundTrip(t, c, r, "during"); err == nil {
		t.Fatal("a connection open before the cut still answers")
	}
	// New connections are accepted and reset at once: the reset may even
	// reach the client's connect, or else its read ends. Either way, no
	// answer.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() { _ = c2.Close() })
		if _, err := roundTrip(t, c2, bufio.NewReader(c2), "new"); err == nil {
			t.Fatal("a connection made during the cut answers")
		}
	}
	p.Restore()
	c3, r3 := dial(t, p)
	if got, err := roundTrip(t, c3, r3, "after"); err != nil || got != "after" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
}

func TestPauseHoldsThenDelivers(t *testing.T) {
	p := faultproxy.Start(t, echoServer(t))
	c, r := dial(t, p)
	if _, err := roundTrip(t, c, r, "before"); err != nil {
		t.Fatal(err)
	}
	p.Pause()
	c2, r2 := dial(t, p) // accepted during the pause
	if _, err := c.Write([]byte("held\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Write([]byte("held too\n")); err != nil {
		t.Fatal(err)
	}
	// Nothing comes back while paused. The deadline only bounds how long
	// the test looks: any answer at all would be the failure.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if s, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during a pause = %q, %v; want nothing", s, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	p.Restore()
	if s, err := r.ReadString('\n'); err != nil || s != "held\n" {
		t.Fatalf("after Restore: %q, %v; want the held line", s, err)
	}
	if s, err := r2.ReadString('\n'); err != nil || s != "held too\n" {
		t.Fatalf("new connection after Restore: %q, %v; want the held line", s, err)
	}
}

func TestLatency(t *testing.T) {
	p := faultproxy.Start(t, echoServer(t))
	c, r := dial(t, p)
	const d = 50 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	if _, err := roundTrip(t, c, r, "slow"); err != nil {
		t.Fatal(err)
	}
	// A lower bound only: the proxy guarantees it, and a busy machine can
	// only make it longer.
	if took := time.Since(start); took < 2*d {
		t.Fatalf("round trip took %v with %v latency each way, want at least %v", took, d, 2*d)
	}
	p.Restore()
	if got, err := roundTrip(t, c, r, "fast"); err != nil || got != "fast" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := faultproxy.New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	if _, err := roundTrip(t, c, r, "x"); err != nil {
		t.Fatal(err)
	}
	p.Pause() // Close must not wait for a paused writer
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("connection still open after Close")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("still listening after Close")
	}
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, target := range []string{"192.0.2.1:5432", "example.com:6379", "nohostport"} {
		if p, err := faultproxy.New(target); err == nil {
			_ = p.Close()
			t.Fatalf("New(%q) succeeded, want an error", target)
		}
	}
}
