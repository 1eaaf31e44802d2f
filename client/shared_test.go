package client_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestSharedClientHonoursRetryAfter: a Client is safe for concurrent use,
// so one shared by a program's goroutines is the client the server sees.
// Once a call is told to wait Retry-After, the other calls must wait too
// instead of sending: each 429 they would get is a strike, and strikes
// past 30 a minute ban the key, although every call honoured Retry-After.
func TestSharedClientHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithClock(clk.Now),
		petstoretest.WithLimits(petstore.Limits{PerMinute: 1, PerDay: 1000}))
	var waiting atomic.Int64
	// A wait that lasts until the call is given up: the test moves the
	// clock itself.
	park := func(ctx context.Context, d time.Duration) error {
		waiting.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	c := srv.Client(client.WithClock(clk.Now, park))
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var returned atomic.Int64 // calls that gave up without waiting
	call := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ListPets(ctx, petstore.PetFilter{}); ctx.Err() == nil {
				t.Logf("a call gave up while another waited: %v", err)
				returned.Add(1)
			}
		}()
	}
	// One call meets the limit and waits; then, a call every second, the
	// program's other goroutines make theirs.
	for i := range 40 {
		call()
		for waiting.Load()+returned.Load() != int64(i+1) {
			time.Sleep(time.Millisecond)
		}
		clk.Advance(time.Second)
	}
	cancel()
	wg.Wait()
	sent := len(srv.Requests())

	clk.Advance(time.Minute)
	if _, err := c.ListPets(context.Background(), petstore.PetFilter{}); err != nil {
		t.Fatalf("a call after Retry-After: %v (%d requests sent while one call waited)", err, sent-2)
	}
	if sent != 2 {
		t.Errorf("%d requests sent while a call waited out Retry-After, want none", sent-2)
	}
}

// TestRetryWaitsOutAHoldStartedMeanwhile: a call backing off after a 503
// that another call's 429 meets while it sleeps must not send its retry
// when its back-off ends, inside the Retry-After the 429 asked of the
// whole client, but when the Retry-After has passed.
func TestRetryWaitsOutAHoldStartedMeanwhile(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	srv.Inject(petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1, Status: 503})
	srv.Inject(petstoretest.Fault{Route: "GET /pets", Times: 1, Status: 429, Header: http.Header{"Retry-After": {"30"}}})
	var c *client.Client
	var held time.Time // when the 429 met by the other call ends
	first := true
	sleep := func(ctx context.Context, d time.Duration) error {
		if first { // the getPet's back-off: meanwhile another call meets a 429
			first = false
			short, cancel := context.WithTimeout(ctx, 10*time.Second) // too short to wait it out
			defer cancel()
			_, err := c.ListPets(short, petstore.PetFilter{})
			if petstore.ErrorCode(err) != petstore.CodeRateLimited {
				t.Errorf("the other call: %v, want rate_limited", err)
			}
			held = clk.Now().Add(30 * time.Second)
		}
		return clk.Sleep(ctx, d)
	}
	c = srv.Client(client.WithClock(clk.Now, sleep), client.WithBackoff(100*time.Millisecond, 100*time.Millisecond))
	if _, err := c.GetPet(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(srv), []int{503, 429, 200}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	// Nothing moves the clock after the retry is sent.
	if sent := clk.Now(); sent.Before(held) {
		t.Fatalf("the retry went %v before the other call's Retry-After had passed (waits %v)", held.Sub(sent), clk.Sleeps())
	}
}
