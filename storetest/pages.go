package storetest

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/petstorekit/petstore"
)

// pagesSeed is 40 pets whose statuses take turns, so every page of a
// filtered list skips pets of other statuses.
var pagesSeed = map[petstore.PetStatus]int{
	petstore.StatusAvailable: 15, petstore.StatusPending: 17, petstore.StatusSold: 5, "": 3,
}

// pagesCases walk every status filter with a limit that divides the number
// of matching pets exactly (the last page is full and must still carry no
// cursor) and one that does not.
var pagesCases = []struct {
	status petstore.PetStatus
	limit  int // 0: the default, 20
	want   int // matching pets
}{
	{"", 0, 40}, {"", 5, 40}, {"", 7, 40}, {"", 100, 40},
	{petstore.StatusAvailable, 5, 15}, {petstore.StatusAvailable, 4, 15},
	{petstore.StatusPending, 17, 17}, {petstore.StatusPending, 5, 17}, {petstore.StatusPending, 1, 17},
	{petstore.StatusSold, 5, 5}, {petstore.StatusSold, 2, 5}, {petstore.StatusSold, 20, 5},
}

// RunPages walks petstore.Service.ListPets over a store from open by its
// cursors, as a client walks Link headers: for every status filter each
// matching pet is visited exactly once, in id order; every page but the
// last is full; the last page has no cursor; a malformed cursor is
// invalid_request. It is part of Run.
func RunPages(t *testing.T, open Opener) {
	ctx := context.Background()
	store := open(t)
	svc := petstore.NewService(store)
	left := maps.Clone(pagesSeed)
	order := []petstore.PetStatus{petstore.StatusAvailable, petstore.StatusPending, petstore.StatusSold, ""}
	var all []petstore.Pet
	for i := 0; len(all) < 40; i++ {
		st := order[i%len(order)]
		if left[st] == 0 {
			continue
		}
		left[st]--
		all = append(all, mustCreate(t, store, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: st}))
	}

	for _, tt := range pagesCases {
		t.Run(fmt.Sprintf("status=%s&limit=%d", tt.status, tt.limit), func(t *testing.T) {
			limit := tt.limit
			if limit == 0 {
				limit = petstore.DefaultLimit
			}
			var want []int64
			for _, p := range all {
				if tt.status == "" || p.Status == tt.status {
					want = append(want, p.ID)
				}
			}
			if len(want) != tt.want {
				t.Fatalf("seeded %d matching pets, the case expects %d", len(want), tt.want)
			}
			var got []int64
			f, pages := petstore.PetFilter{Limit: tt.limit, Status: tt.status}, 0
			for {
				if pages++; pages > len(want)+1 {
					t.Fatalf("more than %d pages: the walk does not end", pages-1)
				}
				page, err := svc.ListPets(ctx, f)
				if err != nil {
					t.Fatalf("ListPets(%+v): %v", f, err)
				}
				for _, p := range page.Pets {
					if tt.status != "" && p.Status != tt.status {
						t.Fatalf("ListPets(%+v) listed %+v", f, p)
					}
					got = append(got, p.ID)
				}
				if page.NextCursor == "" {
					break
				}
				if len(page.Pets) != limit {
					t.Fatalf("page %d has %d pets and a next cursor; want a full page of %d", pages, len(page.Pets), limit)
				}
				f.Cursor = page.NextCursor
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("visited\n%v\nwant each matching pet once, in id order\n%v", got, want)
			}
			if wantPages := max(1, (len(want)+limit-1)/limit); pages != wantPages {
				t.Fatalf("%d pages, want %d", pages, wantPages)
			}
		})
	}
	t.Run("malformed cursor", func(t *testing.T) {
		for _, c := range []string{"garbage!", petstore.EncodeCursor(3) + "x", "djI6Mw"} { // djI6Mw: "v2:3", an unknown version
			_, err := svc.ListPets(ctx, petstore.PetFilter{Cursor: c})
			wantCode(t, err, petstore.CodeInvalidRequest)
		}
	})
}
