package bunopen_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/internal/pgfault"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestPostgresGarbledMessageIsBounded: a PostgreSQL message garbled or
// cut short after the startup (a broken proxy or middlebox), in any part
// of an answer, fails that call with an error within its context, never
// a panic and never a hang; the statement runs at most once, never again
// on another connection behind the caller's back (it reached the server,
// which may have run it); and the connection it came on is closed rather
// than pooled again, while the pool goes on serving.
func TestPostgresGarbledMessageIsBounded(t *testing.T) {
	// Each call inserts its marker, so that a statement run twice shows.
	query := func(ctx context.Context, db *sql.DB, marker string) error {
		rows, err := db.QueryContext(ctx, "INSERT INTO garbled VALUES ('"+marker+"') RETURNING marker")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	exec := func(ctx context.Context, db *sql.DB, marker string) error {
		_, err := db.ExecContext(ctx, "INSERT INTO garbled VALUES ('"+marker+"')")
		return err
	}
	failing := func(ctx context.Context, db *sql.DB, marker string) error {
		_, err := db.ExecContext(ctx, "INSERT INTO garbled VALUES ('"+marker+"' || 1/0)")
		if err != nil && strings.Contains(err.Error(), "division by zero") {
			return fmt.Errorf("the server's own error passed: %w", err)
		}
		return err
	}
	// prepared runs the insert as bunstore's hot statements do: prepared
	// through database/sql, executed with pgx's extended protocol.
	prepared := func(ctx context.Context, db *sql.DB, marker string) error {
		st, err := db.PrepareContext(ctx, "INSERT INTO garbled VALUES ($1)")
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx, marker)
		return err
	}
	// native runs it as bunstore's hot reads do, through the
	// connection's QueryRows (pgx's extended protocol, natively).
	native := func(ctx context.Context, db *sql.DB, marker string) error {
		return queryNative(ctx, db, "INSERT INTO garbled VALUES ($1 || '"+marker+"') RETURNING marker", "")
	}

	commit := func(ctx context.Context, db *sql.DB, marker string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO garbled VALUES ('"+marker+"')"); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("exec in the transaction: %v", err)
		}
		return tx.Commit()
	}
	msg := pgfault.Message
	for _, tc := range []struct {
		name  string
		op    func(context.Context, *sql.DB, string) error
		match string // default: the marker
		typ   byte
		raw   []byte
		fast  bool // refused at its header, not waited for until the deadline
	}{
		{"RowDescription", query, "", pgfault.RowDescription, msg('T', []byte{0, 1}), false},
		{"DataRow", query, "", pgfault.DataRow, msg('D', []byte{0, 1, 0, 0, 0, 9, 'x'}), false},
		{"DataRow without columns", query, "", pgfault.DataRow, msg('D', []byte{0}), false},
		{"CommandComplete", exec, "", pgfault.CommandComplete, msg('C', []byte("INSERT 0 1")), false},
		{"ReadyForQuery", exec, "", pgfault.ReadyForQuery, msg('Z', nil), false},
		{"ReadyForQuery after rows", query, "", pgfault.ReadyForQuery, msg('Z', nil), false},
		{"ErrorResponse", failing, "", pgfault.ErrorResponse, msg('E', []byte{'S', 'E'}), false},
		{"ParseComplete", native, "", pgfault.ParseComplete, msg('1', []byte{1, 2, 3}), false},
		{"BindComplete", native, "", pgfault.BindComplete, msg('2', []byte{1}), false},
		{"prepared BindComplete", prepared, "", pgfault.BindComplete, msg('2', []byte{1}), false},
		{"prepared CommandComplete", prepared, "", pgfault.CommandComplete, msg('C', nil), false},
		{"prepared ReadyForQuery", prepared, "", pgfault.ReadyForQuery, msg('Z', []byte{'I', 'I'}), false},
		{"native DataRow", native, "", pgfault.DataRow, msg('D', []byte{0, 1, 0xff, 0xff, 0xff}), false},
		{"end of a transaction", commit, "commit", pgfault.CommandComplete, msg('C', nil), false},
		{"unknown type", query, "", pgfault.DataRow, msg('?', []byte{1}), false},
		{"length below its own", query, "", pgfault.DataRow, []byte{'D', 0, 0, 0, 2}, false},
		{"length beyond what is sent", query, "", pgfault.DataRow, []byte{'D', 0, 0, 1, 0, 0, 1}, false},
		// A length past the largest message bunopen takes (64 MiB) is
		// refused at once: the driver would otherwise set aside that much
		// memory, which alone can outlast the call's deadline.
		{"length of a gigabyte", query, "", pgfault.DataRow, []byte{'D', 0x3f, 0xff, 0xff, 0xff, 0, 1}, true},
		{"length past 64 MiB", query, "", pgfault.DataRow, []byte{'D', 0x04, 0x00, 0x00, 0x05, 0, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dsn := pgfault.StartFor(t, testenv.PostgresSchema(t))
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
			if _, err := db.ExecContext(ctx, "CREATE TABLE garbled (marker text)"); err != nil {
				t.Fatal(err)
			}
			marker := "garble_" + strings.ReplaceAll(tc.name, " ", "_")
			match := tc.match
			if match == "" {
				match = marker
			}
			fired := p.Garble([]byte(match), tc.typ, tc.raw)
			// The call has 1 s: a message that claims more bytes than
			// come leaves the driver waiting for them, until then.
			const limit = time.Second
			callCtx, cancelCall := context.WithTimeout(ctx, limit)
			defer cancelCall()
			begun := time.Now()
			err = callApart(t, func() error { return tc.op(callCtx, db.DB, marker) })
			took := time.Since(begun)
			select {
			case <-fired:
			default:
				t.Fatalf("the proxy replaced no message (call: %v)", err)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
			open := db.Stats().OpenConnections
			var runs int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM garbled WHERE marker LIKE '%"+marker+"'").Scan(&runs); err != nil {
				t.Fatalf("the pool after the garbled message: %v", err)
			}
			if runs > 1 {
				t.Errorf("the statement answered with a garbled message ran %d times, want at most once", runs)
			}
			if err == nil || strings.HasPrefix(err.Error(), "panic: ") || strings.Contains(err.Error(), "passed") {
				t.Errorf("a call answered with a garbled message: %v, want an error", err)
			}
			if took > limit+2*time.Second {
				t.Errorf("the call took %v, its context %v", took, limit)
			}
			if tc.fast && took > limit/2 {
				t.Errorf("the call took %v: a message longer than bunopen takes was waited for, not refused", took)
			}
			if open != 0 {
				t.Errorf("%d open connections after the garbled message, want 0: the pool kept it", open)
			}
		})
	}
}
