//go:build unix

package bunopen_test

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestPostgresReuseDoesNotWaitForPgxReader: a connection goes back to
// the pool with pgx's own background reader still in a Read of it, and
// the next statement on it, which database/sql first checks through
// ResetSession, runs within its deadline. pgx starts that reader when a
// write to the server takes over 15 ms (here: a statement of 8 MB sent
// while the link is paused) and stops it only when a Read returns; when
// the writing goroutine loses the CPU long enough after its last bytes
// (as under load) for the reader to take the whole answer and read
// again, that Read waits on the idle connection for the server's next
// message. The test holds pgx's write that long. Before, the check read
// the socket and waited behind that Read, deaf to the deadline.
func TestPostgresReuseDoesNotWaitForPgxReader(t *testing.T) {
	u, err := url.Parse(testenv.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", "disable") // the held write is pgx's own, not TLS's records
	u.RawQuery = q.Encode()
	p, dsn := faultproxy.StartFor(t, u.String())
	dialled := make(chan *heldConn, 1)
	db, err := bunopen.OpenPostgresOver(dsn, func(c net.Conn) net.Conn {
		tc, ok := c.(*net.TCPConn)
		if !ok {
			t.Errorf("pgx dialled %T, want a TCP connection", c)
			return c
		}
		// A send buffer of its own, not one the kernel grows to
		// megabytes, so that the statement below fills every buffer on
		// the way to the paused link, which holds a few megabytes.
		if err := tc.SetWriteBuffer(64 << 10); err != nil {
			t.Error(err)
		}
		hc := &heldConn{TCPConn: tc}
		select {
		case dialled <- hc:
		default:
			t.Errorf("pgx dialled a second connection")
		}
		return hc
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	hc := <-dialled

	// The statement, on a connection taken (and checked) before the
	// pause: more than the kernel's and the proxy's buffers hold, so
	// pgx's write blocks while the link is paused.
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 8<<20)
	readsBefore := hc.begun.Load()
	p.Pause()
	hc.hold.Store(true)
	done := make(chan error, 1)
	var n int
	go func() { done <- sc.QueryRowContext(ctx, "SELECT length($1::text)", big).Scan(&n) }()
	for hc.begun.Load() == readsBefore { // nothing is answered while paused: only pgx's reader reads
		select {
		case err := <-done:
			t.Fatalf("the statement ended while the link was paused: %v", err)
		case <-ctx.Done():
			t.Fatal("pgx started no background reader: its write did not block")
		case <-time.After(time.Millisecond):
		}
	}
	p.Restore()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != len(big) {
		t.Fatalf("length = %d, want %d", n, len(big))
	}
	if !hc.held.Load() {
		t.Fatal("pgx's reader did not take the answer while its write was held")
	}
	sc.Close()

	// The state: the connection idle in the pool, pgx's reader in a Read
	// of it.
	if s := db.Stats(); s.Idle != 1 || s.InUse != 0 {
		t.Fatalf("pool: %d idle, %d in use; want the connection idle", s.Idle, s.InUse)
	}
	if n := hc.begun.Load() - hc.ended.Load(); n != 1 {
		t.Fatalf("%d Reads of the idle connection in progress, want pgx's reader's", n)
	}
	if !pgxReaderWaits() {
		t.Fatal("no pgx background reader waits in a Read")
	}

	// The next statement, through the pool and its check, within its
	// deadline.
	const limit = 2 * time.Second
	nctx, ncancel := context.WithTimeout(ctx, limit)
	defer ncancel()
	begun := time.Now()
	next := make(chan error, 1)
	var v int
	go func() { next <- db.QueryRowContext(nctx, "SELECT 41 + 1").Scan(&v) }()
	select {
	case err := <-next:
		if err != nil {
			t.Fatalf("the next statement: %v", err)
		}
	case <-time.After(limit + 3*time.Second):
		hc.TCPConn.Close() // ends the Reads, and with them the calls waiting behind them
		<-next
		t.Fatalf("the next statement still waits %v after it began, its deadline %v: the reuse check waits behind pgx's reader", time.Since(begun).Round(time.Millisecond), limit)
	}
	if took := time.Since(begun); took > limit {
		t.Errorf("the next statement took %v, its deadline %v", took, limit)
	}
	if v != 42 {
		t.Errorf("the next statement returned %d, want 42", v)
	}
}

// heldConn is a connection to the server that counts the Reads begun and
// ended, and whose next write of at least a megabyte, once hold is set,
// returns only after a Read has returned the end of the server's answer
// (ReadyForQuery) and another Read has begun: as when the goroutine that
// wrote loses the CPU for that long.
type heldConn struct {
	*net.TCPConn
	hold         atomic.Bool
	held         atomic.Bool // a write was held until its answer was read
	begun, ended atomic.Int64

	mu         sync.Mutex
	tail       []byte // the last bytes read
	answeredAt int64  // begun when a Read returned a ReadyForQuery
}

// readyForQuery is PostgreSQL's ReadyForQuery, outside a transaction.
var readyForQuery = []byte{'Z', 0, 0, 0, 5, 'I'}

// Read implements net.Conn.
func (c *heldConn) Read(b []byte) (int, error) {
	c.begun.Add(1)
	n, err := c.TCPConn.Read(b)
	c.mu.Lock()
	c.tail = append(c.tail, b[:n]...)
	if bytes.HasSuffix(c.tail, readyForQuery) {
		c.answeredAt = c.begun.Load()
	}
	c.tail = c.tail[max(0, len(c.tail)-len(readyForQuery)):]
	c.mu.Unlock()
	c.ended.Add(1)
	return n, err
}

// Write implements net.Conn.
func (c *heldConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.answeredAt = 0
	c.mu.Unlock()
	n, err := c.TCPConn.Write(b)
	if err != nil || len(b) < 1<<20 || !c.hold.CompareAndSwap(true, false) {
		return n, err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		at := c.answeredAt
		c.mu.Unlock()
		if at > 0 && c.begun.Load() > at {
			c.held.Store(true)
			break
		}
	}
	return n, err
}

// pgxReaderWaits reports whether a goroutine of pgx's background reader
// is parked waiting for the network.
func pgxReaderWaits() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "pgconn/internal/bgreader.(*BGReader).bgRead") {
			return true
		}
	}
	return false
}
