package acme_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/testenv"
)

func TestStorageFileSemantics(t *testing.T) {
	ctx := context.Background()
	s := acme.NewStorage(memstore.New(), nil, nil)
	for _, k := range []string{"certificates/ca/a.com/a.com.crt", "certificates/ca/a.com/a.com.key", "certificates/ca/b.com/b.com.crt", "acme/ca/users/x.json"} {
		if err := s.Store(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path      string
		recursive bool
		want      string
	}{
		{"certificates/ca", false, "[certificates/ca/a.com certificates/ca/b.com]"},
		{"certificates/ca/a.com", false, "[certificates/ca/a.com/a.com.crt certificates/ca/a.com/a.com.key]"},
		{"acme", true, "[acme/ca acme/ca/users acme/ca/users/x.json]"},
		{"", false, "[acme certificates]"},
	} {
		t.Run(fmt.Sprint(tc.path, tc.recursive), func(t *testing.T) {
			got, err := s.List(ctx, tc.path, tc.recursive)
			if err != nil || fmt.Sprint(got) != tc.want {
				t.Fatalf("List = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := s.List(ctx, "nothing", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of nothing: %v, want fs.ErrNotExist", err)
	}
	if info, err := s.Stat(ctx, "certificates/ca/a.com"); err != nil || info.IsTerminal {
		t.Fatalf("Stat(directory) = %+v, %v", info, err)
	}
	if info, err := s.Stat(ctx, "acme/ca/users/x.json"); err != nil || !info.IsTerminal || info.Size != int64(len("acme/ca/users/x.json")) {
		t.Fatalf("Stat(file) = %+v, %v", info, err)
	}
	if _, err := s.Load(ctx, "certificates/ca/c.com/c.com.crt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing key: %v, want fs.ErrNotExist", err)
	}
	if err := s.Delete(ctx, "certificates/ca/a.com"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "certificates/ca/a.com") || s.Exists(ctx, "certificates/ca/a.com/a.com.key") || !s.Exists(ctx, "certificates/ca/b.com") {
		t.Fatal("Delete of a directory did not delete exactly what is under it")
	}
}

// Lock blocks while another holder has the lock, across two Storages on one
// store as across two processes, and takes over a lock left stale.
func TestStorageLock(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	a := acme.NewStorage(store, nil, nil)
	b := acme.NewStorage(store, nil, nil)
	if err := a.Lock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx, "issue_cert_a.com") }()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := b.Lock(short, "issue_cert_a.com"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want the context's deadline", err)
	}
	select {
	case err := <-got:
		t.Fatalf("Lock returned %v while another holds the lock", err)
	default:
	}
	if err := a.Unlock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := b.Unlock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}

	// A holder that died leaves its lock; it goes stale after its TTL.
	now := time.Now()
	dead := acme.NewStorage(store, func() time.Time { return now }, nil)
	if err := dead.Lock(ctx, "renew_cert_b.com"); err != nil {
		t.Fatal(err)
	}
	later := acme.NewStorage(store, func() time.Time { return now.Add(time.Hour) }, nil)
	lctx, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if err := later.Lock(lctx, "renew_cert_b.com"); err != nil {
		t.Fatalf("Lock over a stale lock: %v", err)
	}
}

// Two processes sharing the database whose clocks are an hour apart: the
// one running ahead waits for the other's lock instead of taking it over
// as stale, as lock expiry is judged on the database's clock.
func TestStorageLockOnTheDatabasesClock(t *testing.T) {
	for _, db := range []struct{ name, dsn string }{
		{"PostgreSQL", testenv.PostgresSchema(t)},
		{"MariaDB", testenv.MySQLDatabase(t)},
		{"SQLite", "sqlite:" + filepath.Join(t.TempDir(), "certs.db")},
	} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			conn, err := bunopen.Open(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			if err := bunstore.Migrate(ctx, conn); err != nil {
				t.Fatal(err)
			}
			store := bunstore.New(conn)
			now := time.Now()
			behind := acme.NewStorage(store, func() time.Time { return now }, nil)
			ahead := acme.NewStorage(store, func() time.Time { return now.Add(time.Hour) }, nil)
			if err := behind.Lock(ctx, "issue_cert_a.com"); err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if err := ahead.Lock(short, "issue_cert_a.com"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock by a process whose clock runs an hour ahead: %v, want it to wait for the held lock", err)
			}
			if err := behind.Unlock(ctx, "issue_cert_a.com"); err != nil {
				t.Fatal(err)
			}
			if err := ahead.Lock(ctx, "issue_cert_a.com"); err != nil {
				t.Fatalf("Lock once released: %v", err)
			}
		})
	}
}
