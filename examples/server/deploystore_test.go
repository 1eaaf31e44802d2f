package main

import (
	"context"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// TestDeployStoreContract checks the rules of the DeployStore port, which
// this package owns, against every store that implements it: memstore,
// and bunstore on SQLite (the stores' own tests check how each keeps
// deploys, on every database it supports).
func TestDeployStoreContract(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) DeployStore
	}{
		{"memstore", func(t *testing.T) DeployStore { return memstore.New() }},
		{"bunstore", func(t *testing.T) DeployStore {
			db, err := bunstore.OpenMemory()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := bunstore.Migrate(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			return bunstore.New(db)
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			s := st.open(t)
			at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			if err := s.RecordDeploy(ctx, "", at); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
				t.Fatalf("RecordDeploy without a project: %v, want invalid_request", err)
			}
			if all, err := s.LastDeploys(ctx); err != nil || len(all) != 0 {
				t.Fatalf("LastDeploys after a deploy without a project = %v, %v; want none", all, err)
			}
		})
	}
}
