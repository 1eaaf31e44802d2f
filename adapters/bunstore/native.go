package bunstore

import (
	"context"
	"errors"
)

// On PostgreSQL the reads of the request path (a page of pets, one pet)
// skip database/sql's statement, rows and conversion layers when the
// driver connection can run a query and scan its rows itself: it then
// implements rowQuerier, as the connections of bunopen's PostgreSQL
// handles do over pgx. Each query from 16 goroutines on 2 cores cost the
// process about 57 µs of CPU natively against 77 through database/sql for
// a page of 20, and 34 against 48 for one pet (BenchmarkReads/PostgreSQL,
// measured before reads in flight shared queries, flights.go: its
// parallel reads, all identical, now share them, about 21 µs a read).
// This package still imports no PostgreSQL driver: the method is matched,
// not pgx's type. Any other connection takes the prepared statements.

// rowQuerier is a driver connection that runs query with args (prepared
// once per connection) and, for each row, scans it into dest (pointers,
// as database/sql's Rows.Scan takes, sql.Scanner included) and calls
// each. A failure of each ends the query with that error.
type rowQuerier interface {
	QueryRows(ctx context.Context, query string, args []any, dest []any, each func() error) error
}

// errNotNative is what a connection without QueryRows answers.
var errNotNative = errors.New("bunstore: the driver connection cannot run queries natively")

// Whether the store's connections implement rowQuerier: unknown until the
// first read asks one.
const (
	nativeUnknown int32 = iota
	nativeYes
	nativeNo
)

// queryRows runs a read of the request path natively on a pooled
// connection (see rowQuerier). It reports false, having done nothing,
// when the connections cannot: the caller then uses its prepared
// statement.
func (s *Store) queryRows(ctx context.Context, query string, args []any, dest []any, each func() error) (bool, error) {
	if !s.pg || s.native.Load() == nativeNo {
		return false, nil
	}
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return true, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(rowQuerier)
		if !ok {
			return errNotNative
		}
		s.native.Store(nativeYes)
		return q.QueryRows(ctx, query, args, dest, each)
	})
	if errors.Is(err, errNotNative) {
		s.native.Store(nativeNo)
		return false, nil
	}
	return true, err
}
