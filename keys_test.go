package petstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// TestKeyChangeHook: the hook hears of every stored change to a key, and
// of nothing that failed.
func TestKeyChangeHook(t *testing.T) {
	ctx := context.Background()
	var heard []string
	keys := petstore.NewKeys(memstore.New(), petstore.WithKeyChangeHook(func(_ context.Context, id string) {
		heard = append(heard, id)
	}))
	key, _, err := keys.Create(ctx, "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(heard) != 0 {
		t.Fatalf("a new key is no change, heard %v", heard)
	}
	if _, err := keys.SetPlan(ctx, key.ID, petstore.PlanPro, petstore.Limits{}); err != nil {
		t.Fatal(err)
	}
	ensured, err := keys.Ensure(ctx, "psk_operator_chosen_Q7vLx2Rk9Wm4", petstore.PlanBusiness, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	// Failures change nothing and are not announced.
	if err := keys.Revoke(ctx, key.ID); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("second revoke: %v", err)
	}
	if _, err := keys.SetPlan(ctx, "key_unknown", petstore.PlanPro, petstore.Limits{}); petstore.ErrorCode(err) != petstore.CodeNotFound {
		t.Fatalf("set-plan of an unknown key: %v", err)
	}
	if _, err := keys.SetPlan(ctx, ensured.ID, "gold", petstore.Limits{}); petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
		t.Fatalf("set-plan to an unknown plan: %v", err)
	}
	if want := []string{key.ID, ensured.ID, key.ID}; !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}
