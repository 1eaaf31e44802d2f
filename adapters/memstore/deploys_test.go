package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/memstore"
)

func TestDeploys(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if at, err := s.LastDeploy(ctx, "prj_a"); err != nil || !at.IsZero() {
		t.Fatalf("never deployed: %v, %v", at, err)
	}
	first := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	later := first.Add(time.Hour)
	for _, d := range []struct {
		id string
		at time.Time
	}{{"prj_a", first}, {"prj_b", first}, {"prj_a", later}} {
		if err := s.RecordDeploy(ctx, d.id, d.at); err != nil {
			t.Fatal(err)
		}
	}
	if at, _ := s.LastDeploy(ctx, "prj_a"); !at.Equal(later) {
		t.Fatalf("LastDeploy = %v, want %v", at, later)
	}
	all, err := s.LastDeploys(ctx)
	if err != nil || len(all) != 2 || !all["prj_b"].Equal(first) {
		t.Fatalf("LastDeploys = %v, %v", all, err)
	}
	all["prj_c"] = first // a copy: the store is unchanged
	if again, _ := s.LastDeploys(ctx); len(again) != 2 {
		t.Fatalf("LastDeploys shares its map: %v", again)
	}
}
