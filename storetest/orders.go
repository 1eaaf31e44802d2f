package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
)

// ordersStore is what the orders suite needs: orders, and pets for the
// service's check that an order's pet exists.
type ordersStore interface {
	petstore.OrderStore
	petstore.PetStore
}

// RunOrders checks the petstore.OrderStore contract, and the order
// service over it. It fails when the store does not implement
// petstore.OrderStore.
func RunOrders(t *testing.T, open Opener) {
	ctx := context.Background()
	orders := func(t *testing.T) ordersStore {
		t.Helper()
		s, ok := open(t).(ordersStore)
		if !ok {
			lacks(t, "petstore.OrderStore")
		}
		return s
	}
	create := func(t *testing.T, s petstore.OrderStore, project string, o petstore.NewOrder) petstore.Order {
		t.Helper()
		o.Normalize()
		got, err := s.CreateOrder(ctx, project, o)
		if err != nil {
			t.Fatalf("CreateOrder(%q, %+v): %v", project, o, err)
		}
		return got
	}
	ship := time.Date(2027, 3, 4, 5, 6, 7, 123456000, time.UTC)

	t.Run("CreateThenGet", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		for _, no := range []petstore.NewOrder{
			{PetID: 1},
			{PetID: 9223372036854775807, Quantity: math.MaxInt32, ShipDate: ship, Status: petstore.OrderDelivered, Complete: true},
			{PetID: 2, Quantity: 3, ShipDate: time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC), Status: petstore.OrderApproved},
			{PetID: 3, ShipDate: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		} {
			o := create(t, s, "prj_a", no)
			if o.ID <= 0 {
				t.Fatalf("id = %d, want > 0", o.ID)
			}
			no.Normalize()
			want := petstore.Order{ID: o.ID, PetID: no.PetID, Quantity: no.Quantity, ShipDate: no.ShipDate, Status: no.Status, Complete: no.Complete}
			if o != want {
				t.Fatalf("created %+v, want %+v", o, want)
			}
			got, err := s.GetOrder(ctx, "prj_a", o.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || !got.ShipDate.Equal(want.ShipDate) || got.ShipDate.Location() != want.ShipDate.Location() {
				t.Fatalf("GetOrder = %+v, want %+v", got, want)
			}
		}
	})
	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		_, err := s.GetOrder(ctx, "prj_a", 12345)
		wantCode(t, err, petstore.CodeNotFound)
	})
	t.Run("ProjectsAreIsolated", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		a := create(t, s, "prj_a", petstore.NewOrder{PetID: 1})
		b := create(t, s, "prj_b", petstore.NewOrder{PetID: 1})
		if a.ID == b.ID {
			t.Fatalf("two orders share id %d", a.ID)
		}
		_, err := s.GetOrder(ctx, "prj_b", a.ID)
		wantCode(t, err, petstore.CodeNotFound)
		_, err = s.GetOrder(ctx, "prj_b ", b.ID) // project ids compare exactly
		wantCode(t, err, petstore.CodeNotFound)
		for project, want := range map[string]int64{"prj_a": a.ID, "prj_b": b.ID} {
			got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: project, Limit: 10})
			if err != nil || len(got) != 1 || got[0].ID != want {
				t.Fatalf("ListOrders(%s) = %+v, %v; want only order %d", project, got, err, want)
			}
		}
		got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_c", Limit: 10})
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("ListOrders(prj_c) = %#v, %v; want empty non-nil", got, err)
		}
	})
	t.Run("ListNonPositiveLimit", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		create(t, s, "prj_a", petstore.NewOrder{PetID: 1})
		for _, limit := range []int{0, -1, math.MinInt} {
			got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_a", Limit: limit})
			if err != nil || got == nil || len(got) != 0 {
				t.Fatalf("ListOrders(Limit: %d) = %#v, %v; want empty non-nil", limit, got, err)
			}
		}
	})
	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		statuses := petstore.OrderStatuses()
		var all []petstore.Order
		for i := range 23 {
			all = append(all, create(t, s, "prj_a", petstore.NewOrder{PetID: int64(i + 1), Status: statuses[i%3]}))
			create(t, s, "prj_other", petstore.NewOrder{PetID: 1, Status: statuses[i%3]})
		}
		for _, st := range append([]petstore.OrderStatus{""}, statuses...) {
			var want []petstore.Order
			for _, o := range all {
				if st == "" || o.Status == st {
					want = append(want, o)
				}
			}
			var got []petstore.Order
			var after int64
			for {
				page, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_a", Status: st, AfterID: after, Limit: 4})
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > 4 {
					t.Fatalf("page of %d orders, limit 4", len(page))
				}
				got = append(got, page...)
				if len(page) < 4 {
					break
				}
				after = page[len(page)-1].ID
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("status %q: listed\n%v\nwant\n%v", st, got, want)
			}
		}
	})
	t.Run("ConcurrentCreates", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		const n = 20
		ids := make(chan int64, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				o, err := s.CreateOrder(ctx, "prj_a", petstore.NewOrder{PetID: 1, Quantity: 1, Status: petstore.OrderPlaced})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- o.ID
			})
		}
		wg.Wait()
		close(ids)
		seen := map[int64]bool{}
		for id := range ids {
			if seen[id] {
				t.Fatalf("id %d assigned twice", id)
			}
			seen[id] = true
		}
		got, err := s.ListOrders(ctx, petstore.OrderQuery{ProjectID: "prj_a", Limit: 100})
		if err != nil || len(got) != n {
			t.Fatalf("listed %d orders, %v; want %d", len(got), err, n)
		}
	})
	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		o := create(t, s, "prj_a", petstore.NewOrder{PetID: 1})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.CreateOrder(cctx, "prj_a", petstore.NewOrder{PetID: 1, Quantity: 1, Status: petstore.OrderPlaced}); err == nil {
			t.Fatal("CreateOrder with a canceled context succeeded")
		}
		if _, err := s.GetOrder(cctx, "prj_a", o.ID); err == nil {
			t.Fatal("GetOrder with a canceled context succeeded")
		}
		if _, err := s.ListOrders(cctx, petstore.OrderQuery{ProjectID: "prj_a", Limit: 1}); err == nil {
			t.Fatal("ListOrders with a canceled context succeeded")
		}
	})
	t.Run("Service", func(t *testing.T) {
		t.Parallel()
		s := orders(t)
		svc := petstore.NewOrderService(s)
		pet := mustCreate(t, s, petstore.NewPet{Name: "Rex", CategoryID: 1})

		o, err := svc.CreateOrder(ctx, "prj_a", petstore.NewOrder{PetID: pet.ID, ShipDate: ship.In(time.FixedZone("x", 3600)).Add(789)})
		if err != nil {
			t.Fatal(err)
		}
		want := petstore.Order{ID: o.ID, PetID: pet.ID, Quantity: 1, ShipDate: ship, Status: petstore.OrderPlaced}
		if o != want {
			t.Fatalf("created %+v, want defaults, UTC and microseconds: %+v", o, want)
		}
		_, err = svc.CreateOrder(ctx, "prj_a", petstore.NewOrder{PetID: pet.ID + 1000})
		wantCode(t, err, petstore.CodeInvalidRequest)
		for _, bad := range []petstore.NewOrder{
			{PetID: 0}, {PetID: pet.ID, Quantity: -1}, {PetID: pet.ID, Status: "lost"},
			{PetID: pet.ID, ShipDate: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		} {
			_, err = svc.CreateOrder(ctx, "prj_a", bad)
			wantCode(t, err, petstore.CodeInvalidRequest)
		}
		for _, id := range []int64{0, -1, o.ID + 1000} {
			_, err = svc.GetOrder(ctx, "prj_a", id)
			wantCode(t, err, petstore.CodeNotFound)
		}
		_, err = svc.GetOrder(ctx, "prj_b", o.ID)
		wantCode(t, err, petstore.CodeNotFound)

		for range 9 {
			if _, err := svc.CreateOrder(ctx, "prj_a", petstore.NewOrder{PetID: pet.ID, Status: petstore.OrderApproved}); err != nil {
				t.Fatal(err)
			}
		}
		// 9 approved orders in pages of 3 end on an exact multiple: the
		// last full page carries no cursor.
		seen, cursor, pages := map[int64]bool{}, "", 0
		for {
			page, err := svc.ListOrders(ctx, "prj_a", petstore.OrderFilter{Limit: 3, Status: petstore.OrderApproved, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, o := range page.Orders {
				if seen[o.ID] || o.Status != petstore.OrderApproved {
					t.Fatalf("order %+v listed twice or with another status", o)
				}
				seen[o.ID] = true
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if len(seen) != 9 || pages != 3 {
			t.Fatalf("%d orders in %d pages, want 9 in 3", len(seen), pages)
		}
		for _, f := range []petstore.OrderFilter{{Limit: 101}, {Limit: -1}, {Status: "lost"}, {Cursor: "%%"}} {
			_, err := svc.ListOrders(ctx, "prj_a", f)
			wantCode(t, err, petstore.CodeInvalidRequest)
		}
		page, err := svc.ListOrders(ctx, "prj_empty", petstore.OrderFilter{})
		if err != nil || page.Orders == nil || len(page.Orders) != 0 || page.NextCursor != "" {
			t.Fatalf("empty project's page = %#v, %v", page, err)
		}
	})
	runOrderLimits(t, orders)
}
