package bunopen_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestOpenPausedIsBounded: Open of a database that accepts connections
// but never answers (a black hole) returns ctx's error once ctx is done,
// on every networked kind, rather than wait for an answer forever.
func TestOpenPausedIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t testing.TB) string
	}{
		{"PostgreSQL", testenv.PostgresDSN},
		{"MariaDB", testenv.MySQLDSN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dsn := faultproxy.StartFor(t, tc.dsn(t))
			p.Pause()
			defer p.Restore()
			checkOpenBounded(t, dsn, 500*time.Millisecond)
		})
	}
}

// checkOpenBounded opens dsn within timeout and fails t unless Open
// returns a deadline error about then. A hung Open fails the test, after
// 10 s, instead of hanging the suite (its goroutine is left behind).
func checkOpenBounded(t *testing.T, dsn string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	begun := time.Now()
	go func() {
		db, err := bunopen.Open(ctx, dsn)
		if err == nil {
			_ = db.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Open of a paused database: %v, want an error wrapping context.DeadlineExceeded", err)
		}
		if d := time.Since(begun); d > timeout+2*time.Second {
			t.Fatalf("Open took %v to give up on a paused database, want about %v", d, timeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Open still waits for a paused database after 10 s; its context ended after %v", timeout)
	}
}

// TestOpenMySQLPausedAtTheVersionQueryIsBounded: a MySQL server that
// completes the handshake and answers a ping, then stops answering when
// asked its version (what bun's MySQL dialect asks, with no context, when
// bun.NewDB builds the DB), still lets Open return once ctx is done.
func TestOpenMySQLPausedAtTheVersionQueryIsBounded(t *testing.T) {
	u, err := url.Parse(testenv.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = holdAt(t, u.Host, "version()")
	checkOpenBounded(t, u.String(), 500*time.Millisecond)
}

// holdAt starts a loopback TCP forwarder to target that stops forwarding
// in both directions, and keeps every connection open unanswered (a
// black hole), once a client has sent marker: the repository's
// faultproxy pauses at a moment of the test's choosing, this at a point
// of the protocol. It returns the forwarder's address.
func holdAt(t *testing.T, target, marker string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		held  bool
		conns []net.Conn
	)
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	isHeld := func() bool { mu.Lock(); defer mu.Unlock(); return held }
	pipe := func(dst, src net.Conn, watch bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if watch && strings.Contains(string(buf[:n]), marker) {
				mu.Lock()
				held = true
				mu.Unlock()
			}
			if isHeld() {
				<-stop
				return
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go pipe(s, c, true)
			go pipe(c, s, false)
		}
	}()
	return ln.Addr().String()
}

// TestMigratePausedIsBounded: bunstore.Migrate on a database that stops
// answering once Migrate holds its lock returns once ctx is done.
func TestMigratePausedIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t testing.TB) string
	}{
		{"PostgreSQL", testenv.PostgresSchema},
		{"MariaDB", testenv.MySQLDatabase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			u.Host = holdAt(t, u.Host, "petstore_migrations")
			db := open(t, u.String())
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- bunstore.Migrate(ctx, db) }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("Migrate succeeded on a paused database")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Migrate still waits for a paused database after 10 s; its context ended after 500ms")
			}
		})
	}
}
