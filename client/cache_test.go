package client_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// conditional returns the If-None-Match each logged request sent, and
// the statuses it got.
func conditional(srv *petstoretest.Server) (inm []string, status []int) {
	for _, r := range srv.Requests() {
		inm = append(inm, r.Header.Get("If-None-Match"))
		status = append(status, r.Status)
	}
	return inm, status
}

func names(pets []petstore.Pet) []string {
	var out []string
	for _, p := range pets {
		out = append(out, p.Name)
	}
	return out
}

// TestCacheRevalidates: with WithCache, a GET the client has answered
// before sends its ETag back, and the server's 304 (no body, none of the
// plan's quota) gives the same result. RateLimit keeps telling the plan's
// figures: a 304's describe the conditional allowance.
func TestCacheRevalidates(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(),
		petstoretest.WithLimits(petstore.Limits{PerMinute: 10, PerDay: 100}),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1 << 20)))
	ctx := context.Background()

	first, err := c.ListPets(ctx, petstore.PetFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ListPets(ctx, petstore.PetFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(again.Pets), []string{"Rex"}) || again.NextCursor == "" || again.NextCursor != first.NextCursor {
		t.Fatalf("revalidated page %+v, want %+v", again, first)
	}
	pet, err := c.GetPet(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pet2, err := c.GetPet(ctx, 2); err != nil || pet2 != pet {
		t.Fatalf("revalidated pet %+v, %v; want %+v", pet2, err, pet)
	}
	inm, status := conditional(srv)
	if !slices.Equal(status, []int{200, 304, 200, 304}) || inm[0] != "" || inm[1] == "" || inm[2] != "" || inm[3] == "" {
		t.Fatalf("If-None-Match %q, statuses %v; want the second of each GET conditional and 304", inm, status)
	}
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 10 || rl.Remaining != 8 {
		t.Fatalf("RateLimit() = %+v, %v; want the plan's 10 with 8 left (two 200s spent)", rl, ok)
	}
}

// TestCacheAfterCreate: the client always asks the server, so a pet it
// creates shows in the next list, including on a full last page, whose
// body stays the same but which gains a next link.
func TestCacheAfterCreate(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1 << 20)))
	ctx := context.Background()
	for range 2 {
		page, err := c.ListPets(ctx, petstore.PetFilter{Limit: 2})
		if err != nil || len(page.Pets) != 2 || page.NextCursor != "" {
			t.Fatalf("before the create: %+v, %v", page, err)
		}
	}
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Kiwi", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPets(ctx, petstore.PetFilter{Limit: 2})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("full last page after a create: %+v, %v; want a next cursor", page, err)
	}
	var all []petstore.Pet
	for p, err := range c.All(ctx, petstore.PetFilter{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	if got := names(all); !slices.Equal(got, []string{"Rex", "Tom", "Kiwi"}) {
		t.Fatalf("All after a create = %v", got)
	}
}

// TestCacheIsPerKey: one Cache shared by clients of different keys never
// lets one key's remembered answers stand for another's: another key's
// request is not conditional on them, and a refused key gets its 401.
func TestCacheIsPerKey(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	_, other, err := petstore.NewKeys(srv.Store()).Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	shared := client.NewCache(1 << 20)
	ctx := context.Background()
	a := srv.Client(client.WithCache(shared))
	if _, err := a.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}
	b, _ := client.New(srv.URL, other, client.WithHTTPClient(srv.HTTPClient()), client.WithCache(shared))
	if _, err := b.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}
	bad, _ := client.New(srv.URL, "psk_wrong", client.WithHTTPClient(srv.HTTPClient()), client.WithCache(shared))
	if _, err := bad.ListPets(ctx, petstore.PetFilter{}); asError(t, err).Status != 401 {
		t.Fatalf("a refused key sharing the cache: %v, want 401", err)
	}
	inm, status := conditional(srv)
	if !slices.Equal(inm, []string{"", "", ""}) || !slices.Equal(status, []int{200, 200, 401}) {
		t.Fatalf("If-None-Match %q, statuses %v; want no request conditional on another key's answer", inm, status)
	}
}

// TestCacheIsBounded: a cache too small for an answer keeps none, so
// the next request is not conditional (cache_internal_test.go checks
// which answers a full cache drops).
func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	ctx := context.Background()
	tiny := srv.Client(client.WithCache(client.NewCache(100)))
	for range 2 {
		if _, err := tiny.ListPets(ctx, petstore.PetFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	if inm, _ := conditional(srv); inm[1] != "" {
		t.Fatalf("a 100-byte cache kept a page: If-None-Match %q", inm)
	}

}

// TestCacheConcurrent: clients of two keys share one Cache from many
// goroutines (run with -race), each getting its own answers.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	var seeds []petstore.NewPet
	for i := range 30 {
		seeds = append(seeds, petstore.NewPet{Name: fmt.Sprint("pet", i), CategoryID: 1})
	}
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithoutRateLimits(), petstoretest.WithPets(seeds...))
	_, other, err := petstore.NewKeys(srv.Store()).Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	shared := client.NewCache(4 << 10) // small: entries come and go
	a := srv.Client(client.WithCache(shared))
	b, _ := client.New(srv.URL, other, client.WithHTTPClient(srv.HTTPClient()), client.WithCache(shared))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := []*client.Client{a, b}[g%2]
			for i := range 40 {
				id := int64(1 + (g+i)%30)
				pet, err := c.GetPet(context.Background(), id)
				if err != nil || pet.ID != id {
					t.Errorf("GetPet(%d) = %+v, %v", id, pet, err)
					return
				}
				page, err := c.ListPets(context.Background(), petstore.PetFilter{Limit: 1 + i%5})
				if err != nil || len(page.Pets) != 1+i%5 {
					t.Errorf("ListPets(limit %d) = %d pets, %v", 1+i%5, len(page.Pets), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Whether an answer outlived the churn above depends on the
	// scheduling; that the cache still works after it does not: the same
	// pet twice in a row is a 304 the second time.
	for range 2 {
		if _, err := a.GetPet(context.Background(), 7); err != nil {
			t.Fatal(err)
		}
	}
	if reqs := srv.Requests(); reqs[len(reqs)-1].Status != http.StatusNotModified {
		t.Fatalf("the second of two fetches after the churn: %d, want 304", reqs[len(reqs)-1].Status)
	}
}

// TestCacheNotModifiedOtherETag: a 304 whose ETag is not the one the
// client sent (an intermediary's, say) says the current answer is
// another than the remembered one, which the client then must not use
// (RFC 9111 §4.3.4): it asks again without If-None-Match and returns the
// current answer, here a page with the pet created since.
func TestCacheNotModifiedOtherETag(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1<<20)),
		client.WithClock(nil, func(ctx context.Context, d time.Duration) error { return ctx.Err() }))
	ctx := context.Background()
	if page, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil || !slices.Equal(names(page.Pets), []string{"Rex"}) {
		t.Fatalf("first list: %+v, %v", page, err)
	}
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	srv.Inject(petstoretest.Fault{Route: "GET /pets", Times: 1, Status: http.StatusNotModified,
		Header: http.Header{"Etag": {`"not-the-remembered-one"`}}})
	page, err := c.ListPets(ctx, petstore.PetFilter{})
	if err != nil || !slices.Equal(names(page.Pets), []string{"Rex", "Tom"}) {
		t.Fatalf("list answered 304 with another ETag: %v, %v; want the current page [Rex Tom]", names(page.Pets), err)
	}
}

// TestConditionalAllowanceSpentFallsBackToThePlan: once the key's
// allowance of conditional requests (ten times its plan's minute) is
// spent, the plan's quota still serves unconditional requests
// (docs/rate-limits.md). The client then sends the request again without
// If-None-Match, and no conditional one until the 429's Retry-After has
// passed, rather than holding every call back; RateLimit keeps reporting
// the plan.
func TestConditionalAllowanceSpentFallsBackToThePlan(t *testing.T) {
	t.Parallel()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(),
		petstoretest.WithLimits(petstore.Limits{PerMinute: 4, PerDay: 100}),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1<<20)), client.WithMaxWait(time.Second))
	ctx := context.Background()
	for i := range 42 { // the first spends the plan, 40 are 304s, the last is refused
		if _, err := c.GetPet(ctx, 1); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
	}
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatalf("a list after: %v", err)
	}
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatalf("a fetch after: %v", err)
	}
	inm, status := conditional(srv)
	want := append(append([]int{200}, slices.Repeat([]int{304}, 40)...), 429, 200, 200, 200)
	if !slices.Equal(status, want) || inm[41] == "" || inm[42] != "" || inm[44] != "" {
		t.Fatalf("statuses %v, If-None-Match sent %q; want %v, the refused conditional fetch sent again unconditionally, and the next fetch too", status, inm, want)
	}
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 4 || rl.Remaining != 0 {
		t.Fatalf("RateLimit() = %+v, %v; want the plan's 4, all spent", rl, ok)
	}
}

// TestCacheNotModifiedOtherETagIsNoAttempt: the client asks again at
// once after a 304 for another ETag, whatever its retry policy: the
// server answered, so that answer is not a failed attempt to back off
// from, and a client of one attempt gets the current page too.
func TestCacheNotModifiedOtherETagIsNoAttempt(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1<<20)), client.WithMaxAttempts(1), client.WithClock(clk.Now, clk.Sleep))
	ctx := context.Background()
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}
	srv.Inject(petstoretest.Fault{Route: "GET /pets", Times: 1, Status: http.StatusNotModified,
		Header: http.Header{"Etag": {`"not-the-remembered-one"`}}})
	page, err := c.ListPets(ctx, petstore.PetFilter{})
	if err != nil || !slices.Equal(names(page.Pets), []string{"Rex"}) {
		t.Fatalf("list answered 304 with another ETag: %v, %v; want the current page [Rex]", names(page.Pets), err)
	}
	inm, status := conditional(srv)
	if !slices.Equal(status, []int{200, 304, 200}) || inm[1] == "" || inm[2] != "" || len(clk.Sleeps()) != 0 {
		t.Fatalf("statuses %v, If-None-Match %q, waits %v; want the 304 asked again at once without If-None-Match", status, inm, clk.Sleeps())
	}
}
