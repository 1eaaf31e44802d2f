package petstoretest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/petstoretest"
)

// TestWithClockDatesTheAnswers: with WithClock, answers carry a Date of
// that clock, as the times in their other headers are, so a client on
// the same clock, which reads a Retry-After date against the answer's
// Date, waits what the fault asked for, not the years between the
// test's clock and the real one.
func TestWithClockDatesTheAnswers(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, opts ...petstoretest.Option) {
		clk := testenv.NewClock(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
		srv := petstoretest.NewServer(t, append(opts, petstoretest.WithClock(clk.Now), petstoretest.WithPets(seeds[0]))...)
		if _, h, _ := do(t, srv, "GET", "/pets", ""); h.Get("Date") != clk.Now().Format(http.TimeFormat) {
			t.Fatalf("Date %q, want the clock's %q", h.Get("Date"), clk.Now().Format(http.TimeFormat))
		}
		srv.Inject(petstoretest.Fault{Times: 1, Status: http.StatusTooManyRequests, Header: http.Header{
			"Retry-After": {clk.Now().Add(3 * time.Second).Format(http.TimeFormat)},
		}})
		c := srv.Client(client.WithClock(clk.Now, clk.Sleep))
		page, err := c.ListPets(context.Background(), petstore.PetFilter{})
		if err != nil || len(page.Pets) != 1 {
			t.Fatalf("ListPets after a 429 with a Retry-After date: %+v, %v", page, err)
		}
		if got := clk.Sleeps(); len(got) != 1 || got[0] != 3*time.Second {
			t.Fatalf("the client waited %v, want 3s once", got)
		}
	})
}
