package bunopen_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/mysqlfault"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestOpenMySQLGarbageHandshakeIsAnError: a server on a MySQL address
// whose greeting is cut short (another program on the port, a broken
// proxy) makes Open fail with an error, not crash the process: the
// driver panics on such a greeting.
func TestOpenMySQLGarbageHandshakeIsAnError(t *testing.T) {
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
			// A packet of 2 bytes, sequence 0: protocol 10 and an empty
			// server version, then nothing of what must follow.
			_, _ = c.Write([]byte{2, 0, 0, 0, 10, 0})
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 1024))
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		db, err := bunopen.Open(ctx, "mysql://root:hunter2@"+ln.Addr().String()+"/petstore")
		if err == nil {
			_ = db.Close()
			return fmt.Errorf("Open succeeded")
		}
		t.Log(err)
		return nil
	}()
	if err != nil {
		t.Fatalf("Open of a server with a garbled greeting: %v, want an error", err)
	}
}

// TestMySQLGarbledPacketIsAnError: a packet garbled or cut short after
// the handshake, in any part of a response (column count, column
// definition, row, end of rows, OK or ERR packet, a prepared statement's
// answer), fails that call with an error instead of panicking (the driver
// slices such packets past their end), and the connection it came on is
// closed rather than pooled again, while the pool goes on serving.
func TestMySQLGarbledPacketIsAnError(t *testing.T) {
	query := func(ctx context.Context, db *sql.DB, marker string) error {
		rows, err := db.QueryContext(ctx, "SELECT '"+marker+"'")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	exec := func(ctx context.Context, db *sql.DB, marker string) error {
		_, err := db.ExecContext(ctx, "DO '"+marker+"'")
		return err
	}
	prepare := func(ctx context.Context, db *sql.DB, marker string) error {
		st, err := db.PrepareContext(ctx, "SELECT ? AS `"+marker+"`")
		if err != nil {
			return err
		}
		return st.Close()
	}
	execute := func(ctx context.Context, db *sql.DB, marker string) error {
		st, err := db.PrepareContext(ctx, "SELECT CONCAT(?, '')")
		if err != nil {
			return err
		}
		defer st.Close()
		var s string
		return st.QueryRowContext(ctx, marker).Scan(&s)
	}
	commit := func(ctx context.Context, db *sql.DB, marker string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DO '"+marker+"'"); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("exec in the transaction: %v", err)
		}
		return tx.Commit()
	}
	// Responses to a one-column SELECT from MariaDB, which drops the EOF
	// packets: column count (with its metadata flag), column definition,
	// row, OK packet with an EOF header.
	for _, tc := range []struct {
		name    string
		op      func(context.Context, *sql.DB, string) error
		match   string // default: the marker
		index   int
		payload []byte
	}{
		{"column count", query, "", 0, []byte{0xfc}},
		{"column definition", query, "", 1, []byte{3, 'd', 'e', 'f'}},
		{"row", query, "", 2, []byte{0xfc, 1}},
		{"end of rows", query, "", 3, []byte{0xfe}},
		{"ERR packet", query, "", 0, []byte{0xff, 1}},
		{"OK packet", exec, "", 0, []byte{0}},
		{"prepare answer", prepare, "", 0, []byte{0, 1, 0}},
		{"binary row", execute, "", 2, []byte{0}},
		{"commit", commit, "COMMIT", 0, []byte{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dsn := mysqlfault.StartFor(t, testenv.MySQLDatabase(t))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			db, err := bunopen.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// One connection: the garbled one must be gone before the
			// next call can have any.
			db.SetMaxOpenConns(1)
			if err := db.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			marker := "garble_" + strings.ReplaceAll(tc.name, " ", "_")
			match := tc.match
			if match == "" {
				match = marker
			}
			fired := p.Garble([]byte(match), tc.index, tc.payload)
			err = callApart(t, func() error { return tc.op(ctx, db.DB, marker) })
			select {
			case <-fired:
			default:
				t.Fatalf("the proxy replaced no packet (call: %v)", err)
			}
			if err == nil || strings.HasPrefix(err.Error(), "panic: ") {
				t.Fatalf("a call answered with a garbled packet: %v, want an error", err)
			}
			t.Log(err)
			if n := db.Stats().OpenConnections; n != 0 {
				t.Fatalf("%d open connections after the garbled packet, want 0: the pool kept it", n)
			}
			var one int
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 after the garbled packet = %d, %v; want 1", one, err)
			}
		})
	}
}
