package bunopen

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// go-sql-driver v1.10.1 slices the packets a server sends without
// checking their length, after the handshake as during it: a truncated
// or garbled OK, ERR or EOF packet, column count, column definition or
// row makes the call that reads it panic. database/sql does not recover
// (the panic would end the process, or at best net/http's connection,
// with the pooled connection never handed back), so each call into a
// MySQL connection, its statements, transactions and rows goes through
// a guard that turns the driver's panic into an error on that call and
// marks the connection broken: its network connection is closed at
// once, and database/sql, finding it invalid (driver.Validator), closes
// it instead of pooling it again. The error wraps mysql.ErrInvalidConn,
// which bunstore reports as an unavailable database.

// mysqlDriverConn is what database/sql uses of a go-sql-driver
// connection; guardedConn offers the same.
type mysqlDriverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// mysqlDriverStmt is what database/sql uses of a go-sql-driver statement.
type mysqlDriverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.NamedValueChecker
}

// mysqlDriverRows is what database/sql uses of go-sql-driver's rows.
type mysqlDriverRows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeScanType
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
}

// guardedConn is a go-sql-driver connection whose calls cannot panic.
type guardedConn struct {
	conn    mysqlDriverConn
	netConn net.Conn // the connection the driver dialled, closed when broken
	broken  atomic.Bool
}

// guard wraps c, a connection Connect got from the driver over netConn.
// A driver whose connection lacks a method database/sql uses is one this
// package was not written for: better no connection than one that
// behaves differently without the guard.
func guard(c driver.Conn, netConn net.Conn) (driver.Conn, error) {
	mc, ok := c.(mysqlDriverConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("bunopen: go-sql-driver connection %T lacks a method database/sql uses", c)
	}
	return &guardedConn{conn: mc, netConn: netConn}, nil
}

// recover turns a panic of the driver's into *err (deferred as
// `defer g.recover(&err)`) and breaks the connection: whatever the
// driver read is garbage, and so may be what follows on the wire.
func (g *guardedConn) recover(err *error) {
	r := recover()
	if r == nil {
		return
	}
	g.broken.Store(true)
	if g.netConn != nil {
		_ = g.netConn.Close()
	}
	*err = fmt.Errorf("bunopen: malformed packet from the MySQL server (%v): %w", r, mysql.ErrInvalidConn)
}

// usable returns driver.ErrBadConn once the connection is broken: the
// call then sends nothing, so database/sql may retry it elsewhere.
func (g *guardedConn) usable() error {
	if g.broken.Load() {
		return driver.ErrBadConn
	}
	return nil
}

// Prepare implements driver.Conn.
func (g *guardedConn) Prepare(query string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext.
func (g *guardedConn) PrepareContext(ctx context.Context, query string) (_ driver.Stmt, err error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	st, err := g.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ms, ok := st.(mysqlDriverStmt)
	if !ok {
		_ = st.Close()
		return nil, fmt.Errorf("bunopen: go-sql-driver statement %T lacks a method database/sql uses", st)
	}
	return &guardedStmt{stmt: ms, g: g}, nil
}

// Close implements driver.Conn. On a broken connection the driver's
// Close only ends its own goroutine: the network connection is closed.
func (g *guardedConn) Close() (err error) {
	defer g.recover(&err)
	return g.conn.Close()
}

// Begin implements driver.Conn.
func (g *guardedConn) Begin() (driver.Tx, error) {
	return g.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (g *guardedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	tx, err := g.conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &guardedTx{tx: tx, g: g}, nil
}

// ExecContext implements driver.ExecerContext.
func (g *guardedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	return g.conn.ExecContext(ctx, query, args)
}

// QueryContext implements driver.QueryerContext.
func (g *guardedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Rows, err error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	rows, err := g.conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return g.rows(rows)
}

// Ping implements driver.Pinger.
func (g *guardedConn) Ping(ctx context.Context) (err error) {
	if err := g.usable(); err != nil {
		return err
	}
	defer g.recover(&err)
	return g.conn.Ping(ctx)
}

// ResetSession implements driver.SessionResetter.
func (g *guardedConn) ResetSession(ctx context.Context) (err error) {
	if err := g.usable(); err != nil {
		return err
	}
	defer g.recover(&err)
	return g.conn.ResetSession(ctx)
}

// IsValid implements driver.Validator: a broken connection is not.
func (g *guardedConn) IsValid() bool {
	return !g.broken.Load() && g.conn.IsValid()
}

// CheckNamedValue implements driver.NamedValueChecker with the driver's
// conversions, which it reads nothing from the server for.
func (g *guardedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return g.conn.CheckNamedValue(nv)
}

func (g *guardedConn) rows(r driver.Rows) (driver.Rows, error) {
	mr, ok := r.(mysqlDriverRows)
	if !ok {
		_ = r.Close()
		return nil, fmt.Errorf("bunopen: go-sql-driver rows %T lack a method database/sql uses", r)
	}
	return &guardedRows{mysqlDriverRows: mr, g: g}, nil
}

// guardedStmt is a prepared statement of a guardedConn.
type guardedStmt struct {
	stmt mysqlDriverStmt
	g    *guardedConn
}

// Close implements driver.Stmt.
func (s *guardedStmt) Close() (err error) {
	if s.g.broken.Load() {
		return nil // the server forgot the statement with the connection
	}
	defer s.g.recover(&err)
	return s.stmt.Close()
}

// NumInput implements driver.Stmt.
func (s *guardedStmt) NumInput() int { return s.stmt.NumInput() }

// Exec implements driver.Stmt.
func (s *guardedStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

// Query implements driver.Stmt.
func (s *guardedStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// ExecContext implements driver.StmtExecContext.
func (s *guardedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := s.g.usable(); err != nil {
		return nil, err
	}
	defer s.g.recover(&err)
	return s.stmt.ExecContext(ctx, args)
}

// QueryContext implements driver.StmtQueryContext.
func (s *guardedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (_ driver.Rows, err error) {
	if err := s.g.usable(); err != nil {
		return nil, err
	}
	defer s.g.recover(&err)
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.g.rows(rows)
}

// CheckNamedValue implements driver.NamedValueChecker.
func (s *guardedStmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.stmt.CheckNamedValue(nv)
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

// guardedTx is a transaction of a guardedConn.
type guardedTx struct {
	tx driver.Tx
	g  *guardedConn
}

// Commit implements driver.Tx.
func (t *guardedTx) Commit() (err error) {
	if err := t.g.usable(); err != nil {
		return err
	}
	defer t.g.recover(&err)
	return t.tx.Commit()
}

// Rollback implements driver.Tx.
func (t *guardedTx) Rollback() (err error) {
	if err := t.g.usable(); err != nil {
		return err
	}
	defer t.g.recover(&err)
	return t.tx.Rollback()
}

// guardedRows are rows read from a guardedConn. Their column types come
// from packets already parsed and pass through.
type guardedRows struct {
	mysqlDriverRows
	g *guardedConn
}

// Next implements driver.Rows.
func (r *guardedRows) Next(dest []driver.Value) (err error) {
	if err := r.g.usable(); err != nil {
		return err
	}
	defer r.g.recover(&err)
	return r.mysqlDriverRows.Next(dest)
}

// NextResultSet implements driver.RowsNextResultSet.
func (r *guardedRows) NextResultSet() (err error) {
	if err := r.g.usable(); err != nil {
		return err
	}
	defer r.g.recover(&err)
	return r.mysqlDriverRows.NextResultSet()
}

// HasNextResultSet implements driver.RowsNextResultSet.
func (r *guardedRows) HasNextResultSet() bool {
	return !r.g.broken.Load() && r.mysqlDriverRows.HasNextResultSet()
}

// Close implements driver.Rows. Rows of a broken connection are not
// drained: nothing more is read from it.
func (r *guardedRows) Close() (err error) {
	if r.g.broken.Load() {
		return nil
	}
	defer r.g.recover(&err)
	return r.mysqlDriverRows.Close()
}
