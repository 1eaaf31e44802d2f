package client_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/testenv"
)

// startExampleServer builds and starts examples/server, the production
// program, on a loopback port with the keys of its -keys flag (KEY:PLAN or
// KEY:enterprise:PERMIN/PERDAY), and returns its base URL. It runs in a
// temporary directory, so any database file it creates is removed with it.
func startExampleServer(t *testing.T, keys string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs examples/server; skipped with -short")
	}
	bin := testenv.Build(t, "../examples/server")
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-keys", keys)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PETSTORE_API_KEYS=", "PETSTORE_ADDR=", "PETSTORE_DB=", "PETSTORE_REDIS=")
	return testenv.StartListening(t, cmd).Addr
}

// TestAgainstExampleServer runs the client against the real server
// process, not the fake: what users deploy.
func TestAgainstExampleServer(t *testing.T) {
	t.Parallel()
	key := "psk_client_test_" + rand.Text() // a timestamp's digits can run ('345678'), which the server refuses as guessable
	base := startExampleServer(t, key+":pro")
	c, err := client.New(base, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var created []petstore.Pet
	for i := range 45 {
		p, err := c.CreatePet(ctx, petstore.NewPet{Name: fmt.Sprint("pet", i), CategoryID: int64(i + 1), Status: petstore.StatusPending})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
	}
	var listed []petstore.Pet
	for p, err := range c.All(ctx, petstore.PetFilter{Limit: 10, Status: petstore.StatusPending}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, p)
	}
	if fmt.Sprint(listed) != fmt.Sprint(created) {
		t.Fatalf("listed %d pets, created %d; they differ", len(listed), len(created))
	}
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 300 || rl.Remaining >= 300 {
		t.Fatalf("rate limit figures %+v (reported %v) on a Pro key, want limit 300", rl, ok)
	}
	_, err = c.GetPet(ctx, created[0].ID+1000)
	var perr *petstore.Error
	if !errors.As(err, &perr) || perr.Status != 404 || perr.Code != petstore.CodeNotFound {
		t.Fatalf("GetPet of a missing pet = %v, want a 404 not_found *petstore.Error", err)
	}
}

// TestAgainstExampleServerHonoursRetryAfter runs the client into a real
// 429: an Enterprise key allowed one request a minute. The client must
// schedule the server's Retry-After (a minute at most) before retrying;
// the wait goes through the sleep hook, so the test does not take it.
func TestAgainstExampleServerHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	key := "psk_client_ent_" + rand.Text()
	base := startExampleServer(t, key+":enterprise:1/100")
	var waits []time.Duration
	c, err := client.New(base, key, client.WithMaxAttempts(2), client.WithClock(time.Now,
		func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if rl, ok := c.RateLimit(); !ok || rl.Limit != 1 || rl.Remaining != 0 {
		t.Fatalf("after the first request: %+v (reported %v), want limit 1, none left", rl, ok)
	}
	// The retry, made at once because the hook did not really wait, is
	// refused again: the window has not ended. What counts is the wait the
	// client scheduled in between.
	_, err = c.ListPets(ctx, petstore.PetFilter{})
	var perr *petstore.Error
	if !errors.As(err, &perr) || perr.Status != 429 || perr.Code != petstore.CodeRateLimited {
		t.Fatalf("second request = %v, want a 429 rate_limited *petstore.Error", err)
	}
	if len(waits) != 1 || waits[0] < time.Second || waits[0] > time.Minute {
		t.Fatalf("waits scheduled = %v, want one Retry-After of 1 s to 60 s", waits)
	}
}
