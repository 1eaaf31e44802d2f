package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/ratelimit"
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

// exampleAPI serves a petstore with rate limits and Idempotency-Key
// replay on a loopback port, as examples/server does, and returns its base
// URL, a Pro key and a function that stops it.
func exampleAPI() (baseURL, key string, stop func()) {
	ctx := context.Background()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, err := keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		log.Fatal(err)
	}
	api, err := httpx.New(httpx.Config{
		Service:     petstore.NewService(store),
		Auth:        keys,
		Limiter:     ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{}),
		Idempotency: store,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	ts := httptest.NewServer(mux)
	return ts.URL + "/v1", secret, ts.Close
}

// A caller that may repeat a whole create (a job retried after a crash,
// say) gives it a key of its own, kept with the job: the repeat gets the
// first pet back instead of creating a second, and the same key with
// another pet is refused.
func ExampleWithIdempotencyKey() {
	base, key, stop := exampleAPI()
	defer stop()
	c, err := client.New(base, key)
	if err != nil {
		log.Fatal(err)
	}
	ctx := client.WithIdempotencyKey(context.Background(), "job-42/create-rex")
	first, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.ID, again.ID)
	_, err = c.CreatePet(ctx, petstore.NewPet{Name: "Tom", CategoryID: 1})
	fmt.Println(petstore.ErrorCode(err))
	// Output:
	// 1 1
	// idempotency_key_reused
}

// RateLimit tells how much of the plan's window is left, from the
// X-RateLimit-* headers of the latest answer; IsRetryable tells whether
// an error the client gave up on may go away if the operation is tried
// again later.
func ExampleClient_RateLimit() {
	base, key, stop := exampleAPI()
	defer stop()
	c, err := client.New(base, key)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.GetPet(ctx, 7)
	fmt.Println(petstore.ErrorCode(err), client.IsRetryable(err))
	if rl, ok := c.RateLimit(); ok {
		fmt.Println(rl.Limit, rl.Remaining)
	}
	// Output:
	// not_found false
	// 300 299
}

// The API's getPet operation is deprecated: with a logger, the client
// warns of it once, with the dates the server sends, so the program's
// operators hear of it before the operation is removed.
func ExampleWithLogger() {
	base, key, stop := exampleAPI()
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable Output
			}
			return a
		},
	}))
	c, err := client.New(base, key, client.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	for id := range int64(3) {
		_, _ = c.GetPet(context.Background(), id+1)
	}
	// Output:
	// level=WARN msg="petstore API operation is deprecated" operation=getPet deprecation=2026-01-01T00:00:00.000Z sunset=2030-12-05T00:00:00.000Z successor=/v1/pets
}

// With a Cache, the client sends back the ETag of an answer it has seen:
// an unchanged page comes back 304 Not Modified, without a body and
// without spending the plan's quota, and the call returns the page the
// client remembered. A changed page comes back whole.
func ExampleWithCache() {
	base, key, stop := exampleAPI()
	defer stop()
	c, err := client.New(base, key, client.WithCache(client.NewCache(1<<20)))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	list := func() {
		page, err := c.ListPets(ctx, petstore.PetFilter{})
		if err != nil {
			log.Fatal(err)
		}
		rl, _ := c.RateLimit()
		fmt.Printf("%d pets, %d requests left\n", len(page.Pets), rl.Remaining)
	}
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
		log.Fatal(err)
	}
	list()
	list() // 304: the same page, no quota spent
	if _, err := c.CreatePet(ctx, petstore.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
		log.Fatal(err)
	}
	list() // changed: the whole page again
	// Output:
	// 1 pets, 298 requests left
	// 1 pets, 298 requests left
	// 2 pets, 296 requests left
}
