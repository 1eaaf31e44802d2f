package bunstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/testenv"
)

// TestFirstUseOnAPausedLinkHonoursEachDeadline: the first lookups of a key
// on a store just opened, while the database does not answer (a black
// hole), each end at their own deadline: a request with a short one is not
// held until another's, longer, runs out while that one prepares the
// statement they share.
func TestFirstUseOnAPausedLinkHonoursEachDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"PostgreSQL", testenv.PostgresSchema},
		{"MariaDB", testenv.MySQLDatabase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, s, proxy := throughProxy(t, tc.dsn(t))
			proxy.Pause()
			t.Cleanup(proxy.Restore)

			long, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			first := make(chan error, 1)
			go func() {
				_, _, err := s.KeyByHash(long, "h")
				first <- err
			}()
			time.Sleep(200 * time.Millisecond) // the first lookup prepares the statement

			short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancelShort()
			began := time.Now()
			_, _, err := s.KeyByHash(short, "h")
			if took := time.Since(began); took > 3*time.Second || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a lookup with a 300ms deadline: %v after %v; want %v at its deadline", err, took.Round(time.Millisecond), context.DeadlineExceeded)
			}
			cancel()
			<-first
		})
	}
}
