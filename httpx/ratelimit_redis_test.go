package httpx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

func TestRateLimitRedis(t *testing.T) {
	c := testenv.RedisClient(t)
	e := newRLEnv(t, redislimit.New(c, testenv.RedisPrefix(t, c, "httpx")), nil)
	res := e.get(t)
	wantStatus(t, res, 200, "")
	wantHeaders(t, res, freshFree)
	for range 59 {
		wantStatus(t, e.get(t), 200, "")
	}
	e.clock.Advance(30 * time.Second)
	res = e.get(t)
	wantStatus(t, res, 429, petstore.CodeRateLimited)
	wantHeaders(t, res, map[string]string{
		"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(time.Minute),
		"RateLimit": `"minute";r=0;t=30, "day";r=940;t=86370`, "Retry-After": "30",
	})
	e.clock.Advance(30 * time.Second)
	res = e.get(t)
	wantStatus(t, res, 200, "")
	wantHeaders(t, res, map[string]string{"X-RateLimit-Remaining": "59", "X-RateLimit-Reset": unix(2 * time.Minute)})
}

// TestRateLimitTwoHandlersShareRedis runs two handlers as two processes
// would: each its own Redis client and limiter, one shared key database
// and Redis prefix. 64 concurrent requests on one Free key, spread over
// both, must admit exactly the minute's 60.
func TestRateLimitTwoHandlersShareRedis(t *testing.T) {
	first := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, first, "httpx")
	pets := memstore.New()
	keys := petstore.NewKeys(pets)
	_, secret, err := keys.Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	var handlers []http.Handler
	for _, c := range []*redis.Client{first, testenv.RedisClient(t)} {
		lim := ratelimit.New(redislimit.New(c, prefix), ratelimit.Config{Clock: clk.Now, StoreTimeout: 5 * time.Second})
		h, err := httpx.New(httpx.Config{Service: petstore.NewService(pets), Auth: keys, Limiter: lim})
		if err != nil {
			t.Fatal(err)
		}
		handlers = append(handlers, h)
	}
	req := func() *http.Request {
		r := httptest.NewRequest("GET", "/v1/pets", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		return r
	}
	// t.Fatal may not run off the test goroutine, so the concurrent
	// requests skip the contract check; the request after them takes it.
	codes := make([]int, 64)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			handlers[i%2].ServeHTTP(rec, req())
			codes[i] = rec.Code
		})
	}
	wg.Wait()
	counts := map[int]int{}
	for _, c := range codes {
		counts[c]++
	}
	if counts[200] != 60 || counts[429] != 4 {
		t.Fatalf("statuses %v, want exactly 60 × 200 and 4 × 429", counts)
	}
	for i, h := range handlers {
		t.Run(fmt.Sprintf("handler %d", i), func(t *testing.T) {
			res := do(t, h, "/v1", req())
			wantStatus(t, res, 429, petstore.CodeRateLimited)
			wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(time.Minute)})
		})
	}
}
