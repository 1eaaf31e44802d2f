package bunopen_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestPostgresConnectionsClosedWhileIdle: when the server closes the
// pool's idle connections (PostgreSQL restarted, a proxy or a firewall
// dropped them), the next call, however soon, runs once on a fresh
// connection instead of failing on a dead one: nothing was sent on it, so
// there is nothing to be unsure of. Every kind of call the stores make is
// checked: bun's SQL (simple protocol), a statement prepared through
// database/sql, a native read (QueryRows) and a transaction.
func TestPostgresConnectionsClosedWhileIdle(t *testing.T) {
	insert := "INSERT INTO idle VALUES ($1)"
	for _, tc := range []struct {
		name string
		op   func(context.Context, *sql.DB, string) error
	}{
		{"simple", func(ctx context.Context, db *sql.DB, marker string) error {
			_, err := db.ExecContext(ctx, "INSERT INTO idle VALUES ('"+marker+"')")
			return err
		}},
		{"prepared", func(ctx context.Context, db *sql.DB, marker string) error {
			st, err := db.PrepareContext(ctx, insert)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx, marker)
			return err
		}},
		{"native", func(ctx context.Context, db *sql.DB, marker string) error {
			return queryNative(ctx, db, insert+" RETURNING marker", marker)
		}},
		{"transaction", func(ctx context.Context, db *sql.DB, marker string) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, insert, marker); err != nil {
				_ = tx.Rollback()
				return err
			}
			return tx.Commit()
		}},
	} {
		for _, sslmode := range []string{"disable", "require"} {
			t.Run(tc.name+"/sslmode="+sslmode, func(t *testing.T) {
				testIdleConnectionsClosed(t, sslmode, tc.op)
			})
		}
	}
}

// testIdleConnectionsClosed is TestPostgresConnectionsClosedWhileIdle
// for one kind of call op, over a connection of the sslmode given.
func testIdleConnectionsClosed(t *testing.T, sslmode string, op func(context.Context, *sql.DB, string) error) {
	direct := testenv.PostgresSchema(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", sslmode)
	u.RawQuery = q.Encode()
	if sslmode != "disable" {
		db, err := bunopen.Open(context.Background(), direct)
		if err != nil {
			t.Fatal(err)
		}
		var ssl string
		err = db.QueryRowContext(context.Background(), "SHOW ssl").Scan(&ssl)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ssl != "on" {
			t.Skipf("the PostgreSQL server has TLS off (ssl = %s)", ssl)
		}
	}
	p, dsn := faultproxy.StartFor(t, u.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := bunopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE idle (marker text)"); err != nil {
		t.Fatal(err)
	}
	var tls bool
	if err := db.DB.QueryRowContext(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&tls); err != nil {
		t.Fatal(err)
	}
	if want := sslmode != "disable"; tls != want {
		t.Fatalf("TLS %v with sslmode=%s", tls, sslmode)
	}
	// Three connections in the pool, each reused a moment ago:
	// pgx pings one before reusing it only when its last reuse
	// was more than a second ago (or never), as on a busy server.
	for range 2 {
		var conns []*sql.Conn
		for range 3 {
			c, err := db.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	// The server closes them all; then it is reachable again.
	p.Cut()
	p.Restore()
	for i := range 3 {
		marker := fmt.Sprintf("idle_%d", i)
		if err := op(ctx, db.DB, marker); err != nil {
			t.Fatalf("call %d after the server closed the idle connections: %v, want it run on a fresh one", i+1, err)
		}
		var runs int
		if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM idle WHERE marker = $1", marker).Scan(&runs); err != nil {
			t.Fatal(err)
		}
		if runs != 1 {
			t.Fatalf("call %d ran %d times, want once", i+1, runs)
		}
	}
}
