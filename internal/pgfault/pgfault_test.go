package pgfault_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/petstorekit/petstore/internal/pgfault"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestGarbleReplacesOneMessage: through the proxy a client that asks for
// TLS first (sslmode=prefer) gets a connection in the clear, and the
// armed rule replaces the one message it names, the DataRow of the
// query that matches, and no other.
func TestGarbleReplacesOneMessage(t *testing.T) {
	u, err := url.Parse(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", "prefer")
	u.RawQuery = q.Encode()
	p, dsn := pgfault.StartFor(t, u.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A DataRow of one text column: "swapped".
	row := pgfault.Message(pgfault.DataRow, append([]byte{0, 1, 0, 0, 0, 7}, "swapped"...))
	fired := p.Garble([]byte("original"), pgfault.DataRow, row)
	for i, want := range []string{"swapped", "original"} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT 'original'", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
		if got != want {
			t.Fatalf("query %d = %q, want %q", i+1, got, want)
		}
	}
	select {
	case <-fired:
	default:
		t.Fatal("Garble's channel is open after the message was replaced")
	}
}
