package redislimit_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/ratelimit"
)

// Every process of a deployment builds its limiter the same way, on the
// same Redis and prefix, and together they admit no more than each plan
// allows. At shutdown, Close gives the shares this process holds unused
// back to Redis, for the other processes to admit at once. (It needs a
// Redis server, so it is compiled, not run.)
func ExampleNew() {
	opts, err := redislimit.ParseOptions("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	limiter := ratelimit.New(redislimit.New(client, "petstore:rl:"), ratelimit.Config{})

	// ... serve with limiter as httpx.Config.Limiter ...

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := limiter.Close(ctx); err != nil {
		log.Printf("shares not given back; they return when their windows end: %v", err)
	}
}
