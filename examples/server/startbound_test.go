package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestStartWithAPausedMariaDBIsBounded is TestStartWithAPausedDatabaseIsBounded
// on MariaDB: a server, or a keys command, whose database accepts
// connections but never answers says so within -db-timeout and exits.
func TestStartWithAPausedMariaDBIsBounded(t *testing.T) {
	proxy, dsn := faultproxy.StartFor(t, testenv.MySQLDatabase(t))
	proxy.Pause()
	defer proxy.Restore()
	for _, args := range [][]string{{"-addr", "127.0.0.1:0"}, {"keys", "list"}} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // ends a run that hangs, once the test has failed
		done := make(chan error, 1)
		begun := time.Now()
		go func() {
			done <- run(ctx, append([]string{"-db", dsn, "-db-timeout", "1s"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "within -db-timeout 1s") {
				t.Fatalf("%q with the database paused: %v, want an error naming -db-timeout", args, err)
			}
			if d := time.Since(begun); d > 3*time.Second {
				t.Fatalf("%q took %v to give up on a paused database, want about 1 s", args, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q still waits for a paused database after 10 s; -db-timeout is 1s", args)
		}
	}
}
