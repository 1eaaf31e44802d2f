package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/httpx"
)

func ExampleNew() {
	ctx := context.Background()
	// A petstore to talk to; in real life, the production URL.
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, _ := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	api, _ := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys})
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	ts := httptest.NewServer(mux)
	defer ts.Close()

	c, err := client.New(ts.URL+"/v1", secret)
	if err != nil {
		log.Fatal(err)
	}
	// c is a petstore.PetService, like a local petstore.Service.
	var svc petstore.PetService = c
	for _, name := range []string{"Rex", "Tom", "Kiwi"} {
		if _, err := svc.CreatePet(ctx, petstore.NewPet{Name: name, CategoryID: 1}); err != nil {
			log.Fatal(err)
		}
	}
	for pet, err := range c.All(ctx, petstore.PetFilter{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(pet.ID, pet.Name)
	}
	_, err = svc.GetPet(ctx, 99)
	var perr *petstore.Error
	if errors.As(err, &perr) {
		fmt.Println(perr.Status, perr.Code)
	}
	// Output:
	// 1 Rex
	// 2 Tom
	// 3 Kiwi
	// 404 not_found
}
