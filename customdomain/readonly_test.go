package customdomain_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestRunDueEndsWhenTheDatabaseRefusesWrites: PostgreSQL answers reads but
// refuses every write (a session that is read-only, as on a standby after
// a failover), and more domains are due than one batch. The due list then
// never shrinks; RunDue must still run each domain once and return,
// instead of fetching the same batch again and again until its context
// ends.
func TestRunDueEndsWhenTheDatabaseRefusesWrites(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(dsn string) *bunstore.Store {
		db, err := bunopen.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return bunstore.New(db)
	}
	writable := open(dsn)
	if err := bunstore.Migrate(ctx, writable.DB()); err != nil {
		t.Fatal(err)
	}
	config := func(c *customdomain.EngineConfig) { c.MaxDomainsPerProject = -1 }
	w := domaintest.New(t, domaintest.Options{Store: writable, Projects: projects, Start: start, Config: config})
	const n = 150
	for i := range n {
		if _, _, err := w.Engine.Add(ctx, "prj_pro", fmt.Sprintf("s%d.example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	readOnly := open(dsn + "&default_transaction_read_only=on")
	later := start.Add(1000 * time.Hour)
	if due, err := readOnly.DueDomains(ctx, later, n+1); err != nil || len(due) != n {
		t.Fatalf("%d due (%v), want all %d: the test proves nothing", len(due), err, n)
	}
	e := domaintest.New(t, domaintest.Options{Store: readOnly, Projects: projects, Start: start, Config: config}).Engine
	done, err := e.RunDue(ctx, later)
	if err != nil || done != n {
		t.Fatalf("RunDue = %d, %v; want each of the %d domains run once and no error", done, err, n)
	}
	if due, err := readOnly.DueDomains(ctx, later, n+1); err != nil || len(due) != n {
		t.Fatalf("after RunDue %d due (%v), want all %d: a write went through, the test proves nothing", len(due), err, n)
	}
}
