package memstore_test

import (
	"context"
	"fmt"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
)

// One Store holds everything a server keeps: here the pets, the API keys
// and the store orders of one process, gone when it exits.
func ExampleNew() {
	ctx := context.Background()
	store := memstore.New()
	pets := petstore.NewService(store)
	keys := petstore.NewKeys(store)
	orders := petstore.NewOrderService(store)

	pet, err := pets.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, _, err := keys.Create(ctx, "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	order, err := orders.CreateOrder(ctx, key.ProjectID, petstore.NewOrder{PetID: pet.ID})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pet.ID, pet.Name, key.Plan)
	fmt.Println(order.ID, order.PetID, order.Quantity, order.Status)
	// Output:
	// 1 Rex free
	// 1 1 1 placed
}
