package petstoretest_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/petstoretest"
)

func TestSeedOrders(t *testing.T) {
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}),
		petstoretest.WithOrders(petstore.NewOrder{PetID: 1}, petstore.NewOrder{PetID: 1, Status: petstore.OrderApproved}))
	got := srv.Orders()
	if len(got) != 2 || got[0].Quantity != 1 || got[0].Status != petstore.OrderPlaced || got[1].Status != petstore.OrderApproved {
		t.Fatalf("seeded %+v, want two orders with the defaults applied", got)
	}
	status, header, body := do(t, srv, "GET", "/store/orders/"+strconv.FormatInt(got[1].ID, 10), "")
	if status != 200 || header.Get("X-API-Stability") != "beta" {
		t.Fatalf("GET the seeded order: %d %v %s", status, header, body)
	}

	more := srv.SeedOrders(petstore.NewOrder{PetID: 1, Quantity: 4})
	if len(more) != 1 || len(srv.Orders()) != 3 {
		t.Fatalf("SeedOrders returned %+v; %d orders now", more, len(srv.Orders()))
	}
	srv.Reset()
	if got := srv.Orders(); len(got) != 2 || got[0].ID != 1 {
		t.Fatalf("after Reset: %+v, want the two WithOrders orders again from id 1", got)
	}
	if status, _, _ := do(t, srv, "DELETE", "/store/orders", ""); status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", status)
	}
}
