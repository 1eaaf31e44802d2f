package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestSignalDuringStartStopsCleanly: an operator who stops a server that
// is still starting, its start held on the database (the link paused as
// the server opens it, or the migrations waiting for their lock), gets a
// clean stop: exit status 0 and a line saying the server stopped during
// its start, not a failure naming a cancelled context.
func TestSignalDuringStartStopsCleanly(t *testing.T) {
	t.Parallel()
	bin := builds.Build(t, ".")
	for _, tc := range []struct {
		name string
		// hold makes the server's start wait on the database (dsn goes
		// through proxy) and returns when the server is waiting.
		hold func(t *testing.T, direct string, proxy *faultproxy.Proxy) func(t *testing.T) bool
	}{
		{"paused at open", func(t *testing.T, _ string, proxy *faultproxy.Proxy) func(t *testing.T) bool {
			proxy.Pause()
			t.Cleanup(proxy.Restore)
			return func(*testing.T) bool { return proxy.Conns() >= 1 }
		}},
		{"migrations wait for their lock", func(t *testing.T, direct string, _ *faultproxy.Proxy) func(t *testing.T) bool {
			holder, err := bunopen.Open(context.Background(), direct)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { holder.Close() })
			conn, err := holder.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			var got string
			if err := conn.QueryRowContext(context.Background(), "SELECT pg_advisory_lock(hashtext(current_schema() || '.petstore_migrate'))::text").Scan(&got); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) bool {
				var n int
				err := conn.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))").Scan(&n)
				return err == nil && n == 1
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := testenv.PostgresSchema(t)
			proxy, dsn := faultproxy.StartFor(t, direct)
			waiting := tc.hold(t, direct, proxy)
			var stdout, stderr testenv.Buffer
			cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "30s", "-migrate-timeout", "30s",
				"-keys", faultKey+":pro")
			cmd.Env = serverEnv()
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			until(t, 10*time.Second, "the start waits on the database", func() bool {
				select {
				case err := <-exited:
					t.Fatalf("the server exited before its start was held: %v\n%s%s", err, stdout.String(), stderr.String())
				default:
				}
				return waiting(t)
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
				exited <- err // for the cleanup
			case <-time.After(10 * time.Second):
				t.Fatalf("still starting 10 s after SIGTERM:\n%s%s", stdout.String(), stderr.String())
			}
			if code := 0; err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					code = exit.ExitCode()
				}
				t.Fatalf("SIGTERM during the start: exit status %d (%v), want 0\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), "petstore: stopped during start") {
				t.Fatalf("no line saying the server stopped during its start\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			if s := stderr.String(); strings.Contains(s, "context canceled") && !strings.Contains(s, "stopped during start") {
				t.Fatalf("the stop reads as a failure:\n%s", s)
			}
		})
	}
}
