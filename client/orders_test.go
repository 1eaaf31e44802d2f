package client_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

func TestOrders(t *testing.T) {
	var seeds []petstore.NewOrder
	for i := range 23 {
		st := petstore.OrderPlaced
		if i%4 == 0 {
			st = petstore.OrderDelivered
		}
		seeds = append(seeds, petstore.NewOrder{PetID: 1, Quantity: int32(i + 1), Status: st})
	}
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}), petstoretest.WithOrders(seeds...))
	c := srv.Client()
	ctx := context.Background()

	for _, tt := range []struct {
		name          string
		filter        petstore.OrderFilter
		orders, pages int
	}{
		{"all, pages of 5", petstore.OrderFilter{Limit: 5}, 23, 5},
		{"delivered, pages of 2", petstore.OrderFilter{Limit: 2, Status: petstore.OrderDelivered}, 6, 3},
		{"default page", petstore.OrderFilter{}, 23, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Reset()
			var ids []int64
			for o, err := range c.AllOrders(ctx, tt.filter) {
				if err != nil {
					t.Fatal(err)
				}
				if tt.filter.Status != "" && o.Status != tt.filter.Status {
					t.Fatalf("order %+v does not match status %s", o, tt.filter.Status)
				}
				ids = append(ids, o.ID)
			}
			if len(ids) != tt.orders || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("AllOrders yielded %v, want %d distinct ascending", ids, tt.orders)
			}
			if n := len(srv.Requests()); n != tt.pages {
				t.Fatalf("%d requests, want %d pages", n, tt.pages)
			}
		})
	}

	t.Run("ListOrders cursor", func(t *testing.T) {
		page, err := c.ListOrders(ctx, petstore.OrderFilter{Limit: 20})
		if err != nil || len(page.Orders) != 20 || page.NextCursor == "" {
			t.Fatalf("first page: %d orders, cursor %q, %v", len(page.Orders), page.NextCursor, err)
		}
		page, err = c.ListOrders(ctx, petstore.OrderFilter{Limit: 20, Cursor: page.NextCursor})
		if err != nil || len(page.Orders) != 3 || page.NextCursor != "" {
			t.Fatalf("last page: %d orders, cursor %q, %v", len(page.Orders), page.NextCursor, err)
		}
	})

	t.Run("create once through a lost answer, then get", func(t *testing.T) {
		srv.Reset()
		// The first attempt is served and its answer lost: the retry under
		// the same Idempotency-Key gets the first order back.
		srv.Inject(petstoretest.Fault{Route: "POST /store/orders", Times: 1, Status: 502, After: true})
		ship := time.Date(2027, 5, 6, 7, 8, 9, 0, time.UTC)
		o, err := c.CreateOrder(ctx, petstore.NewOrder{PetID: 1, Quantity: 2, ShipDate: ship, Complete: true})
		if err != nil {
			t.Fatal(err)
		}
		want := petstore.Order{ID: o.ID, PetID: 1, Quantity: 2, ShipDate: ship, Status: petstore.OrderPlaced, Complete: true}
		if o != want {
			t.Fatalf("created %+v, want %+v", o, want)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("%d requests, want the lost one and its retry", n)
		}
		if n := len(srv.Orders()); n != len(seeds)+1 {
			t.Fatalf("%d orders, want %d: the retry placed a second one", n, len(seeds)+1)
		}
		got, err := c.GetOrder(ctx, o.ID)
		if err != nil || got != want {
			t.Fatalf("GetOrder = %+v, %v", got, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := c.CreateOrder(ctx, petstore.NewOrder{PetID: 999})
		if petstore.ErrorCode(err) != petstore.CodeInvalidRequest {
			t.Fatalf("unknown pet: %v", err)
		}
		_, err = c.GetOrder(ctx, 999)
		if petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatalf("unknown order: %v", err)
		}
	})

	t.Run("another project sees none", func(t *testing.T) {
		mine := srv.Orders()
		_, secret, err := petstore.NewKeys(srv.Store()).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		other, err := client.New(srv.URL, secret, client.WithHTTPClient(srv.HTTPClient()))
		if err != nil {
			t.Fatal(err)
		}
		page, err := other.ListOrders(ctx, petstore.OrderFilter{})
		if err != nil || len(page.Orders) != 0 {
			t.Fatalf("other project lists %+v, %v", page.Orders, err)
		}
		_, err = other.GetOrder(ctx, mine[0].ID)
		if petstore.ErrorCode(err) != petstore.CodeNotFound {
			t.Fatalf("other project's GetOrder: %v", err)
		}
	})
}
