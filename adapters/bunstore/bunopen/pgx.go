package bunopen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"
)

// openPostgres opens a PostgreSQL handle through pgx's database/sql driver
// whose connections can also run bunstore's hot reads natively: each is
// pgx's own *stdlib.Conn with a QueryRows method (see bunstore's
// native.go), which queries through pgx's connection directly, sparing
// database/sql's statement, rows and conversion layers. Everything else
// (bun, migrations, the other queries) goes through database/sql as
// before, on the same connections. wrap, when not nil, comes between pgx
// and each connection it dials (for tests).
func openPostgres(dsn string, wrap func(net.Conn) net.Conn) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(r, w)
		f.SetMaxBodyLen(maxMessageBody)
		return f
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if wrap != nil {
			c = wrap(c)
		}
		return &countingConn{Conn: c}, nil
	}
	// pgConn.ResetSession checks every connection before reuse (its
	// socket, or a ping): pgx's own ping of one idle over a second would
	// be a second round trip for nothing.
	noPing := stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false })
	return sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg, noPing)}), nil
}

// maxMessageBody is the longest message body a PostgreSQL connection
// takes. pgx's own limit is 1 GiB, which it sets aside before reading the
// body, so one garbled length could cost that much memory and, allocating
// it, outlast the call's deadline. A longer message fails its call and
// closes the connection. Nothing this module stores comes near it.
const maxMessageBody = 64 << 20

type pgConnector struct{ driver.Connector }

// Connect returns pgx's connection, wrapped to add QueryRows.
func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		return conn, nil // not pgx's: no native reads, nothing else changes
	}
	nc := sc.Conn().PgConn().Conn()
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = u.NetConn()
	}
	cc, ok := nc.(*countingConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("bunopen: pgx connection over %T, not the one dialled", nc)
	}
	return &pgConn{Conn: sc, net: cc}, nil
}

// countingConn counts the bytes written to the server, which tell
// whether a failed call reached it (see pgConn.settle).
type countingConn struct {
	net.Conn
	written atomic.Int64
}

// Write implements net.Conn.
func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// pgConn is pgx's *stdlib.Conn, every method of which it keeps (so
// database/sql sees the same optional interfaces), plus QueryRows,
// IsValid, and a check on the errors of statements.
//
// That check: pgx's stdlib answers driver.ErrBadConn, which makes
// database/sql run the statement again on another connection, whenever
// pgx deems the error safe to retry. pgx v5.12 also does so for a
// statement the server received and may have run: when a message of the
// answer arrives garbled, its simple-protocol reader drops the decoding
// error, closes the connection and then reports "conn closed", which
// pgx counts as nothing sent. database/sql would then insert a row
// twice. So a statement whose bytes went out is never retried: its
// driver.ErrBadConn becomes an error wrapping io.ErrUnexpectedEOF (the
// answer did not arrive whole), which bunstore reports as an
// unavailable database.
type pgConn struct {
	*stdlib.Conn
	net *countingConn // the connection to the server, under TLS if any
}

// database/sql finds a connection's optional behaviour by type
// assertion: pgConn keeps every interface pgx's *stdlib.Conn has.
var (
	_ driver.ConnBeginTx        = (*pgConn)(nil)
	_ driver.ConnPrepareContext = (*pgConn)(nil)
	_ driver.ExecerContext      = (*pgConn)(nil)
	_ driver.QueryerContext     = (*pgConn)(nil)
	_ driver.Pinger             = (*pgConn)(nil)
	_ driver.NamedValueChecker  = (*pgConn)(nil)
	_ driver.SessionResetter    = (*pgConn)(nil)
	_ driver.Validator          = (*pgConn)(nil)
	_ driver.StmtExecContext    = (*checkedStmt)(nil)
	_ driver.StmtQueryContext   = (*checkedStmt)(nil)
)

// ResetSession implements driver.SessionResetter: before database/sql
// reuses a pooled connection, it checks that the server has not closed
// it meanwhile (PostgreSQL restarted, a proxy or a firewall dropped it),
// then lets pgx reset it, with pgx's own ping turned off. pgx pinged only
// a connection idle for more than a second, and a statement sent on one
// the server closed gets no answer, so it could not be told from one the
// server may have run (see settle): the call would fail where a fresh
// connection serves it. On
// Unix the check looks at the socket, without a round trip; where it
// cannot (other systems, a connection that is not a socket) it pings the
// server, a round trip on every reuse. database/sql takes another
// connection when this returns driver.ErrBadConn.
func (c *pgConn) ResetSession(ctx context.Context) error {
	switch open, known := c.net.open(); {
	case !known:
		if err := c.Conn.Ping(ctx); err != nil {
			return driver.ErrBadConn
		}
	case !open:
		return driver.ErrBadConn
	}
	return c.Conn.ResetSession(ctx)
}

// settle returns err, unless it is driver.ErrBadConn for a call that
// wrote to the server after before bytes had been written.
func (c *pgConn) settle(before int64, err error) error {
	if err == nil || !errors.Is(err, driver.ErrBadConn) || c.net.written.Load() == before {
		return err
	}
	return fmt.Errorf("bunopen: the PostgreSQL connection broke after the statement was sent, which may have run: %w", io.ErrUnexpectedEOF)
}

// ExecContext implements driver.ExecerContext.
func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	before := c.net.written.Load()
	r, err := c.Conn.ExecContext(ctx, query, args)
	return r, c.settle(before, err)
}

// QueryContext implements driver.QueryerContext.
func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	before := c.net.written.Load()
	r, err := c.Conn.QueryContext(ctx, query, args)
	return r, c.settle(before, err)
}

// PrepareContext implements driver.ConnPrepareContext: its statements'
// errors are checked as the connection's are.
func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ps, ok := st.(pgStmt)
	if !ok {
		_ = st.Close()
		return nil, fmt.Errorf("bunopen: pgx statement %T lacks a method database/sql uses", st)
	}
	return &checkedStmt{pgStmt: ps, c: c}, nil
}

// Prepare implements driver.Conn.
func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// IsValid implements driver.Validator: a connection pgx closed (after a
// lost link or a garbled message) goes back to no pool.
func (c *pgConn) IsValid() bool { return !c.Conn.Conn().IsClosed() }

// pgStmt is what database/sql uses of a pgx statement.
type pgStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// checkedStmt is a statement of a pgConn.
type checkedStmt struct {
	pgStmt
	c *pgConn
}

// Exec implements driver.Stmt.
func (s *checkedStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

// Query implements driver.Stmt.
func (s *checkedStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// ExecContext implements driver.StmtExecContext.
func (s *checkedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	before := s.c.net.written.Load()
	r, err := s.pgStmt.ExecContext(ctx, args)
	return r, s.c.settle(before, err)
}

// QueryContext implements driver.StmtQueryContext.
func (s *checkedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	before := s.c.net.written.Load()
	r, err := s.pgStmt.QueryContext(ctx, args)
	return r, s.c.settle(before, err)
}

// QueryRows runs query with args on the pgx connection, as a statement
// prepared once per connection and cached by its text (the handle's
// default mode is the simple protocol, which suits bun's interpolated
// SQL, not these fixed queries), scanning each row into dest and calling
// each.
func (c *pgConn) QueryRows(ctx context.Context, query string, args []any, dest []any, each func() error) error {
	all := make([]any, 0, len(args)+1)
	all = append(all, pgx.QueryExecModeCacheStatement)
	all = append(all, args...)
	rows, err := c.Conn.Conn().Query(ctx, query, all...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := each(); err != nil {
			return err
		}
	}
	return rows.Err()
}
