package petstore_test

import (
	"context"
	"fmt"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// A Service validates input and pages through any store; here the
// in-memory one.
func ExampleService() {
	ctx := context.Background()
	svc := petstore.NewService(memstore.New())
	for _, name := range []string{"Rex", "Tom", "Kitty"} {
		if _, err := svc.CreatePet(ctx, petstore.NewPet{Name: name, CategoryID: 1, Status: petstore.StatusAvailable}); err != nil {
			fmt.Println(err)
		}
	}
	page, _ := svc.ListPets(ctx, petstore.PetFilter{Limit: 2})
	fmt.Println(page.Pets[0].Name, page.Pets[1].Name, page.NextCursor != "")
	page, _ = svc.ListPets(ctx, petstore.PetFilter{Limit: 2, Cursor: page.NextCursor})
	fmt.Println(page.Pets[0].Name, page.NextCursor == "")

	_, err := svc.CreatePet(ctx, petstore.NewPet{Name: "Rex"})
	fmt.Println(petstore.ErrorCode(err), petstore.ErrorMessage(err))
	// Output:
	// Rex Tom true
	// Kitty true
	// invalid_request categoryId must be an integer >= 1
}

// Keys stores only hashes: the secret is shown once, when it is created.
func ExampleKeys() {
	ctx := context.Background()
	keys := petstore.NewKeys(memstore.New())
	key, secret, _ := keys.Create(ctx, "prj_demo", petstore.PlanFree, petstore.Limits{})
	got, err := keys.Authenticate(ctx, secret)
	fmt.Println(err == nil, got.ID == key.ID, got.EffectiveLimits())
	_, err = keys.Authenticate(ctx, "psk_guess")
	fmt.Println(petstore.ErrorCode(err))
	// Output:
	// true true {60 1000}
	// unauthorized
}
