package bunstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
)

// Each project keeps its last deploy, to the nanosecond, in UTC; a later
// deploy replaces it and other projects are untouched.
func TestDeploys(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := bunstore.New(b.open(t))
			if at, err := s.LastDeploy(ctx, "prj_a"); err != nil || !at.IsZero() {
				t.Fatalf("never deployed: %v, %v", at, err)
			}
			first := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.FixedZone("X", 3600))
			if err := s.RecordDeploy(ctx, "prj_a", first); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordDeploy(ctx, "prj_b", first); err != nil {
				t.Fatal(err)
			}
			later := first.Add(time.Hour)
			if err := s.RecordDeploy(ctx, "prj_a", later); err != nil {
				t.Fatal(err)
			}
			if at, err := s.LastDeploy(ctx, "prj_a"); err != nil || !at.Equal(later) || at.Location() != time.UTC {
				t.Fatalf("LastDeploy = %v, %v; want %v in UTC", at, err, later)
			}
			all, err := s.LastDeploys(ctx)
			if err != nil || len(all) != 2 || !all["prj_a"].Equal(later) || !all["prj_b"].Equal(first) {
				t.Fatalf("LastDeploys = %v, %v", all, err)
			}
		})
	}
}

// TestDeploysCompareProjectsExactly: a project id that differs from a
// stored one by trailing spaces is another project on every database.
// MariaDB's utf8mb4_bin collation pads with spaces, so a deploy of
// "prj_a " used to replace prj_a's and read as prj_a's.
func TestDeploysCompareProjectsExactly(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := bunstore.New(b.open(t))
			first := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			if err := s.RecordDeploy(ctx, "prj_a", first); err != nil {
				t.Fatal(err)
			}
			if at, err := s.LastDeploy(ctx, "prj_a "); err != nil || !at.IsZero() {
				t.Errorf("LastDeploy(prj_a ) = %v, %v; want never deployed", at, err)
			}
			if err := s.RecordDeploy(ctx, "prj_a ", first.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if at, err := s.LastDeploy(ctx, "prj_a"); err != nil || !at.Equal(first) {
				t.Errorf("LastDeploy(prj_a) after prj_a 's deploy = %v, %v; want %v", at, err, first)
			}
			if all, err := s.LastDeploys(ctx); err != nil || len(all) != 2 {
				t.Errorf("LastDeploys = %v, %v; want prj_a and prj_a  apart", all, err)
			}
		})
	}
}

// TestRecordDeployChecksTheProjectID: a project id longer than a store
// keeps, or not storable text, is refused as invalid_request on every
// database, not truncated, refused as an internal error or stored.
func TestRecordDeployChecksTheProjectID(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := bunstore.New(b.open(t))
			at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			for _, id := range []string{strings.Repeat("p", petstore.MaxProjectIDBytes+1), "prj\x00a", "prj\xffa"} {
				if err := s.RecordDeploy(ctx, id, at); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
					t.Errorf("RecordDeploy(%q) = %v; want invalid_request", id, err)
				}
			}
			if all, err := s.LastDeploys(ctx); err != nil || len(all) != 0 {
				t.Errorf("LastDeploys = %v, %v; want none stored", all, err)
			}
			if err := s.RecordDeploy(ctx, strings.Repeat("p", petstore.MaxProjectIDBytes), at); err != nil {
				t.Errorf("RecordDeploy(a project id of MaxProjectIDBytes) = %v; want it stored", err)
			}
		})
	}
}
