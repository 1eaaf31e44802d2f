package bunopen_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// plainConn hides the socket under a connection, as a connection the
// check cannot look at: one outside Unix, where Go offers no peek that
// does not wait.
type plainConn struct{ net.Conn }

// TestPostgresClosedWhileIdleWithoutASocketCheck: where the pool cannot
// look at a connection's socket (outside Unix), a connection the server
// closed while it sat in the pool a moment ago is still never used: the
// next call runs once, on a fresh connection. Before, the check reported
// such a connection open, and the call failed on it.
func TestPostgresClosedWhileIdleWithoutASocketCheck(t *testing.T) {
	p, dsn := faultproxy.StartFor(t, testenv.PostgresSchema(t))
	db, err := bunopen.OpenPostgresOver(dsn, func(c net.Conn) net.Conn { return plainConn{c} })
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE TABLE idle (marker text)"); err != nil {
		t.Fatal(err)
	}
	// Reused a moment ago: pgx itself pings only a connection idle for
	// more than a second.
	for range 3 {
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	p.Cut()
	p.Restore()
	for i := range 3 {
		marker := fmt.Sprintf("idle_%d", i)
		if _, err := db.ExecContext(ctx, "INSERT INTO idle VALUES ($1)", marker); err != nil {
			t.Fatalf("call %d after the server closed the idle connection: %v, want it run on a fresh one", i+1, err)
		}
		var runs int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM idle WHERE marker = $1", marker).Scan(&runs); err != nil {
			t.Fatal(err)
		}
		if runs != 1 {
			t.Fatalf("call %d ran %d times, want once", i+1, runs)
		}
	}
}
