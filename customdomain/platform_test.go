package customdomain_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

type countingStore struct {
	customdomain.Store
	updates atomic.Int64
}

func (s *countingStore) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	s.updates.Add(1)
	return s.Store.UpdateDomain(ctx, e)
}

// A suspended project's live domain waits: the background loop does not
// write it again every minute (it changed nothing a customer sees), only
// at its usual drift-check interval.
func TestSuspendedLiveDomainIsNotRewrittenEveryMinute(t *testing.T) {
	ctx := context.Background()
	f, p := planFixture(t)
	store := &countingStore{Store: f.store}
	ev := &events{}
	f.engine = f.replica(t, func(c *customdomain.EngineConfig) { c.Projects, c.Store, c.Events = p, store, ev })
	f.set(t, "example.com.", cname("shop", target))
	f.add(t, "prj_a", "shop.example.com")
	f.verify(t, "prj_a", "shop.example.com")
	before, _ := f.store.DomainByName(ctx, "shop.example.com")
	p.SetPlan("prj_a", petstore.PlanFree)
	ev.take()
	store.updates.Store(0)
	for range 3 * 60 { // three hours, a minute at a time
		if _, err := f.engine.RunDue(ctx, f.clock.Advance(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.updates.Load(); n > 3 {
		t.Fatalf("in 3 hours the suspended active domain was written %d times, want at most once an hour", n)
	}
	after, _ := f.store.DomainByName(ctx, "shop.example.com")
	if !after.UpdatedAt.Equal(before.UpdatedAt) || len(after.History) != len(before.History) || len(ev.take()) != 0 {
		t.Fatalf("waiting changed what customers see: updatedAt %v → %v, history %d → %d", before.UpdatedAt, after.UpdatedAt, len(before.History), len(after.History))
	}
}
