package httpx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
)

// TestPagesOverHTTP walks GET /pets by its Link headers on the memory
// store and on SQLite (storetest.RunPages walks the same pages through the
// service, on every store).
func TestPagesOverHTTP(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { walkPagesOverHTTP(t, memstore.New()) })
	t.Run("bunstore-sqlite", func(t *testing.T) {
		db, err := bunstore.OpenMemory()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := bunstore.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		walkPagesOverHTTP(t, bunstore.New(db))
	})
}

// pagesSeed is 40 pets whose statuses take turns, so every page of a
// filtered list skips pets of other statuses.
var pagesSeed = map[petstore.PetStatus]int{
	petstore.StatusAvailable: 15, petstore.StatusPending: 17, petstore.StatusSold: 5, "": 3,
}

// pagesCases walk every status filter with a limit that divides the number
// of matching pets exactly (the last page is full and must still carry no
// Link) and one that does not.
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

var nextLink = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walkPagesOverHTTP serves the /v1 API over store and walks GET /pets by
// its Link rel="next" headers, as a client would: for every status filter
// each matching pet is visited exactly once, in id order; every page but
// the last is full; the last page has no Link; a malformed cursor is 400.
func walkPagesOverHTTP(t *testing.T, store petstore.Store) {
	ctx := context.Background()
	api, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store)})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := petstore.NewKeys(store).Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, target string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w
	}

	left := maps.Clone(pagesSeed)
	order := []petstore.PetStatus{petstore.StatusAvailable, petstore.StatusPending, petstore.StatusSold, ""}
	var all []petstore.Pet
	for i := 0; len(all) < 40; i++ {
		st := order[i%len(order)]
		if left[st] == 0 {
			continue
		}
		left[st]--
		all = append(all, mustCreatePet(t, store, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: st}))
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
			q := url.Values{}
			if tt.status != "" {
				q.Set("status", string(tt.status))
			}
			if tt.limit != 0 {
				q.Set("limit", fmt.Sprint(tt.limit))
			}
			var got []int64
			next, pages := "/v1/pets?"+q.Encode(), 0
			for next != "" {
				if pages++; pages > len(want)+1 {
					t.Fatalf("more than %d pages: the walk does not end", pages-1)
				}
				w := get(t, next)
				var page []petstore.Pet
				if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || w.Code != http.StatusOK {
					t.Fatalf("GET %s: %d %s (%v)", next, w.Code, w.Body, err)
				}
				for _, p := range page {
					if tt.status != "" && p.Status != tt.status {
						t.Fatalf("GET %s listed %+v", next, p)
					}
					got = append(got, p.ID)
				}
				next = ""
				if m := nextLink.FindStringSubmatch(w.Header().Get("Link")); m != nil {
					next = m[1]
					if len(page) != limit {
						t.Fatalf("page %d has %d pets and a next link; want a full page of %d", pages, len(page), limit)
					}
				} else if link := w.Header().Get("Link"); link != "" {
					t.Fatalf("Link %q is not one rel=next link", link)
				}
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
			w := get(t, "/v1/pets?cursor="+url.QueryEscape(c))
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"invalid_request"`) {
				t.Fatalf("cursor %q: %d %s, want 400 invalid_request", c, w.Code, w.Body)
			}
		}
	})
}

func mustCreatePet(t testing.TB, s petstore.PetStore, p petstore.NewPet) petstore.Pet {
	t.Helper()
	pet, err := s.CreatePet(context.Background(), p)
	if err != nil {
		t.Fatalf("CreatePet(%+v): %v", p, err)
	}
	return pet
}
