package bunopen_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// callApart runs op in a goroutine of its own, so that a panic, or a
// call stuck behind one (database/sql's locks stay held when a driver
// panics under them), fails the test rather than ending or hanging it:
// a panic is returned as an error starting "panic: ", and a call still
// running after 10 s fails t.
func callApart(t *testing.T, op func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		done <- op()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call still runs after 10 s")
		return nil
	}
}

// queryNative runs query (returning one text column) on one of db's
// connections through its QueryRows, pgx's extended protocol used
// natively, as bunstore's hot reads do.
func queryNative(ctx context.Context, db *sql.DB, query string, args ...any) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		q, ok := dc.(interface {
			QueryRows(context.Context, string, []any, []any, func() error) error
		})
		if !ok {
			return fmt.Errorf("connection %T has no QueryRows", dc)
		}
		var s string
		return q.QueryRows(ctx, query, args, []any{&s}, func() error { return nil })
	})
}
