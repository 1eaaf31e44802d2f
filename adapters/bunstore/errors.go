package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/petstorekit/petstore"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// errUnavailable is what a client sees when the database cannot answer.
// It names no driver, host or SQL: those go to logs through the wrapped
// error, never to a response.
func errUnavailable() *petstore.Error {
	return petstore.Errorf(petstore.CodeUnavailable, "the database is unavailable; try again later")
}

// keyNotFound is the error of a key id no stored key has.
func keyNotFound(id string) *petstore.Error {
	return petstore.Errorf(petstore.CodeNotFound, "key %s not found", id)
}

// noRevokedKey is UnrevokeKey's error for an id no revoked key has.
func noRevokedKey(id string) *petstore.Error {
	return petstore.Errorf(petstore.CodeNotFound, "no revoked key %s", id)
}

// unavailableError is an unavailable *petstore.Error that keeps the driver
// error for logs: errors.As finds the *petstore.Error (so clients see only
// its message) and errors.Unwrap reaches the cause.
type unavailableError struct {
	app   *petstore.Error
	cause error
}

func (e *unavailableError) Error() string   { return e.app.Error() + ": " + e.cause.Error() }
func (e *unavailableError) Unwrap() []error { return []error{e.app, e.cause} }

// mapErr turns a database error into the error a store method returns.
// op names the operation for logs.
func mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	// A canceled or expired context wins: drivers report it in many ways
	// ("driver: bad connection", "interrupted", a net timeout), but the
	// caller asked for it and must be told so.
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *petstore.Error
	if errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return petstore.Errorf(petstore.CodeNotFound, "not found")
	case isUnique(err):
		return petstore.Errorf(petstore.CodeConflict, "already exists")
	case isUnavailable(err):
		return &unavailableError{app: errUnavailable(), cause: fmt.Errorf("bunstore: %s: %w", op, err)}
	}
	return fmt.Errorf("bunstore: %s: %w", op, err)
}

// sqlStater is implemented by pgx's *pgconn.PgError. Matching the method
// instead of the type keeps the pgx driver out of this package's imports.
type sqlStater interface{ SQLState() string }

func isUnique(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var ps sqlStater
	if errors.As(err, &ps) {
		return ps.SQLState() == "23505"
	}
	// go-sql-driver/mysql's *MySQLError has no method exposing its number,
	// and importing the driver here would force it on SQLite users; its
	// message always starts with the number.
	return strings.HasPrefix(err.Error(), "Error 1062 ")
}

// isDeadlock reports a transaction the database chose to end to break a
// deadlock (MySQL's 1213, PostgreSQL's 40P01): nothing of it was written.
func isDeadlock(err error) bool {
	var ps sqlStater
	if errors.As(err, &ps) {
		return ps.SQLState() == "40P01"
	}
	return strings.HasPrefix(err.Error(), "Error 1213 ")
}

func isUnavailable(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		// A writer that waited out busy_timeout, or a file that cannot be
		// opened or written, is a database that cannot answer now: never
		// "database is locked" to a user.
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
			return true
		}
		return false
	}
	var ps sqlStater
	if errors.As(err, &ps) {
		s := ps.SQLState()
		// Class 08 is connection exceptions, 53 insufficient resources
		// (too many connections), 57P0x the server shutting down; 57014
		// and 25P03 are the statement and idle-in-transaction timeouts
		// CreateOnce sets from the request's deadline.
		return strings.HasPrefix(s, "08") || strings.HasPrefix(s, "53") || strings.HasPrefix(s, "57P0") ||
			s == "57014" || s == "25P03"
	}
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return true
	}
	msg := err.Error()
	for _, s := range []string{
		"sql: database is closed", // database/sql has no exported value for it
		"invalid connection",      // go-sql-driver/mysql's ErrInvalidConn
		"failed to connect",       // pgconn.ConnectError, when not wrapping a net error
		"conn closed",             // pgx: a commit on a connection lost mid-transaction
		"Error 1040 ",             // MySQL: too many connections
		"Error 1053 ",             // MySQL: server shutdown in progress
		"connection refused",
		// pgx's pgproto3, on a message from the server garbled or cut
		// short on the way (pgx then closes the connection).
		"body must have length of",
		"body is invalid",
		"invalid body length",
		"invalid message length",
		"unknown message type",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
