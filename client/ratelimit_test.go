package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/client"
)

// TestRateLimitIsOfTheLatestRequest: two calls in flight, the later one
// answered first. RateLimit keeps the figures of the request sent last,
// the server's newest count, not those of the earlier request whose slow
// answer happened to finish after it.
func TestRateLimitIsOfTheLatestRequest(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remaining := "9" // the later request, counted after the earlier one
		if strings.HasSuffix(r.URL.Path, "/1") {
			remaining = "10"
			close(arrived)
			<-release
		}
		w.Header().Set("X-RateLimit-Limit", "60")
		w.Header().Set("X-RateLimit-Remaining", remaining)
		w.Header().Set("X-RateLimit-Reset", "1795000000")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":1,"name":"Rex","categoryId":1,"status":"available"}`)
	}))
	t.Cleanup(api.Close)
	c, err := client.New(api.URL+"/v1", "psk_P0oI9uY8tR7eW6qA5sD3fG1h", client.WithHTTPClient(api.Client()), client.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	earlier := make(chan error, 1)
	go func() {
		_, err := c.GetPet(ctx, 1)
		earlier <- err
	}()
	<-arrived
	_, err = c.GetPet(ctx, 2)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-earlier; err != nil {
		t.Fatal(err)
	}
	if rl, ok := c.RateLimit(); !ok || rl.Remaining != 9 {
		t.Fatalf("RateLimit() = %+v, %v; want the later request's 9 remaining", rl, ok)
	}
}
