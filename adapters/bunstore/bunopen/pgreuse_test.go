package bunopen_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/testenv"
)

// writeCounter counts the writes on a TCP connection, keeping its socket
// in view (SyscallConn), so the pool still looks at it before reuse.
type writeCounter struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c writeCounter) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(b)
}

// TestPostgresReuseAfterAnIdleSecondIsOneRoundTrip: a connection the pool
// has looked at before reusing it is not pinged as well, however long it
// sat idle, so a statement on it is one round trip. Before, pgx pinged
// every connection idle for over a second after the look, a second round
// trip before each statement of a quiet server, which a slow link doubles.
func TestPostgresReuseAfterAnIdleSecondIsOneRoundTrip(t *testing.T) {
	var writes atomic.Int64
	db, err := bunopen.OpenPostgresOver(testenv.PostgresSchema(t), func(c net.Conn) net.Conn {
		tcp, ok := c.(*net.TCPConn)
		if !ok {
			t.Errorf("dialed a %T, want a TCP connection", c)
			return c
		}
		return writeCounter{TCPConn: tcp, writes: &writes}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // pgx pings a connection idle for more than a second, by the clock
	writes.Store(0)
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("a statement on a connection idle for a second wrote %d times, want once: its own round trip only", n)
	}
}
