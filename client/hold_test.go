package client_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/client"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/petstoretest"
	"github.com/petstorekit/petstore/ratelimit"
)

// sent is one request as it left the client: when (on the test's clock),
// whether it was conditional, and the status it got.
type sent struct {
	at          time.Time
	conditional bool
	status      int
}

// sendLog is a transport that logs what goes through it to the fake and
// runs meanwhile, once, before it hands back the first answer for which
// it returns true, what the test does while the client holds that answer.
type sendLog struct {
	next http.RoundTripper
	clk  *testenv.Clock

	mu        sync.Mutex
	log       []sent
	meanwhile func(*http.Request, *http.Response) bool
}

func (s *sendLog) RoundTrip(req *http.Request) (*http.Response, error) {
	at := s.clk.Now()
	resp, err := s.next.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	s.mu.Lock()
	s.log = append(s.log, sent{at: at, conditional: req.Header.Get("If-None-Match") != "", status: status})
	hook := s.meanwhile
	s.mu.Unlock()
	if err == nil && hook != nil && hook(req, resp) {
		s.mu.Lock()
		s.meanwhile = nil
		s.mu.Unlock()
	}
	return resp, err
}

// loggedCachingClient is a client of srv on clk, with a cache, whose
// requests rt logs.
func loggedCachingClient(t *testing.T, srv *petstoretest.Server, clk *testenv.Clock) (*client.Client, *sendLog) {
	t.Helper()
	rt := &sendLog{next: srv.HTTPClient().Transport, clk: clk}
	c, err := client.New(srv.URL, srv.Key(), client.WithHTTPClient(&http.Client{Transport: rt}),
		client.WithCache(client.NewCache(1<<20)), client.WithClock(clk.Now, clk.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	return c, rt
}

func (s *sendLog) sent() []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sent(nil), s.log...)
}

// TestAskingAgainWaitsOutAHoldStartedMeanwhile: a conditional request
// the client sends again at once without If-None-Match (refused by its
// allowance, 429, or answered 304 for another ETag) is not sent while the
// client is held: when another call meets a plan's 429 before it goes, it
// waits out that 429's Retry-After like any request of the client, since
// each request refused meanwhile is a strike towards a ban.
func TestAskingAgainWaitsOutAHoldStartedMeanwhile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup brings the client to the conditional fetch it sends again.
		setup func(t *testing.T, c *client.Client, srv *petstoretest.Server)
		// asked is the answer after which it sends it again.
		asked int
	}{{
		name: "allowance spent",
		setup: func(t *testing.T, c *client.Client, _ *petstoretest.Server) {
			for i := range 10 { // 304s: the allowance is ten a minute
				if _, err := c.GetPet(context.Background(), 1); err != nil {
					t.Fatalf("fetch %d: %v", i+2, err)
				}
			}
		},
		asked: http.StatusTooManyRequests,
	}, {
		name: "304 for another ETag",
		setup: func(t *testing.T, _ *client.Client, srv *petstoretest.Server) {
			srv.Inject(petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1, Status: http.StatusNotModified,
				Header: http.Header{"Etag": {`"not-the-remembered-one"`}}})
		},
		asked: http.StatusNotModified,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithClock(clk.Now),
				petstoretest.WithLimits(petstore.Limits{PerMinute: 1, PerDay: 1000}),
				petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
			c, rt := loggedCachingClient(t, srv, clk)
			ctx := context.Background()
			if _, err := c.GetPet(ctx, 1); err != nil { // spends the plan's minute
				t.Fatal(err)
			}
			tc.setup(t, c, srv)

			var held time.Time // the end of the Retry-After of the other call's 429
			asked := -1        // the index in the log of the answer asked again
			rt.meanwhile = func(req *http.Request, resp *http.Response) bool {
				if resp.StatusCode != tc.asked || req.Header.Get("If-None-Match") == "" {
					return false
				}
				asked = len(rt.sent()) - 1
				// Before the client asks again, another call meets the
				// plan's 429. Its deadline is too short to wait it out.
				short, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, err := c.ListPets(short, petstore.PetFilter{})
				var ra *client.RetryAfterError
				if !errors.As(err, &ra) || ra.Err.Code != petstore.CodeRateLimited || ra.RetryAfter <= 0 {
					t.Errorf("the other call: %v, want rate_limited with a Retry-After", err)
					return true
				}
				held = clk.Now().Add(ra.RetryAfter)
				return true
			}
			if _, err := c.GetPet(ctx, 1); err != nil {
				t.Fatalf("the fetch asked again: %v", err)
			}
			if asked < 0 || held.IsZero() {
				t.Fatalf("no conditional fetch was answered %d, or the other call met no 429", tc.asked)
			}
			log := rt.sent()
			for i, s := range log[asked+2:] { // after the other call's 429
				if s.at.Before(held) {
					t.Errorf("request %d (conditional %v, answered %d) went %v before the other call's Retry-After had passed", asked+3+i, s.conditional, s.status, held.Sub(s.at))
				}
			}
		})
	}
}

// TestBannedPlanKeepsConditionalRequests: while the key is banned on its
// plan, its conditional requests still get their 304s (docs/rate-limits.md),
// so the client keeps sending them. A conditional request for a page that
// changed is answered in full on the plan's quota, and refused by the
// ban: that 429 is the plan's, not the allowance's, and must not stop the
// client's other conditional requests, which would then all be refused.
func TestBannedPlanKeepsConditionalRequests(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithClock(clk.Now),
		petstoretest.WithLimits(petstore.Limits{PerMinute: 2, PerDay: 1000}),
		petstoretest.WithBanPolicy(ratelimit.BanPolicy{Strikes: 1, Grace: -1}),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c := srv.Client(client.WithCache(client.NewCache(1<<20)), client.WithClock(clk.Now, clk.Sleep))
	ctx := context.Background()
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); err != nil {
		t.Fatal(err)
	}
	// Other programs with the same key get the plan's 429s, strikes
	// enough for a ban.
	for range 3 {
		_, err := srv.Client(client.WithMaxWait(0)).ListPets(ctx, petstore.PetFilter{})
		if code := petstore.ErrorCode(err); code == petstore.CodeAPIKeyBanned {
			break
		} else if code != petstore.CodeRateLimited {
			t.Fatalf("a call of another program: %v, want rate_limited", err)
		}
	}
	if _, err := srv.Client(client.WithMaxWait(0)).ListPets(ctx, petstore.PetFilter{}); petstore.ErrorCode(err) != petstore.CodeAPIKeyBanned {
		t.Fatalf("the key is not banned: %v", err)
	}
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatalf("a fetch revalidated while banned: %v", err)
	}

	// The page changes: its full answer spends the plan's quota, which
	// the ban refuses.
	if _, err := srv.Store().CreatePet(ctx, petstore.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPets(ctx, petstore.PetFilter{}); petstore.ErrorCode(err) != petstore.CodeAPIKeyBanned {
		t.Fatalf("the changed page while banned: %v, want api_key_banned", err)
	}
	for i := range 3 {
		if _, err := c.GetPet(ctx, 1); err != nil {
			inm, status := conditional(srv)
			t.Fatalf("fetch %d after the changed page: %v; want the pet, revalidated (If-None-Match %q, statuses %v)", i+1, err, inm, status)
		}
	}
}

// TestConditionalStopEndsAtTheLatestRetryAfter: two conditional requests
// in flight together may both be refused 429 by the allowance of
// conditional requests, the one answered last with the shorter
// Retry-After: here, a rate_limited 429 of 1 s that comes back after the
// allowance's ban of 15 minutes. The client sends no conditional request
// until the later end has passed: one sent before is refused again
// (after a rate limit's 429, a strike towards a ban).
func TestConditionalStopEndsAtTheLatestRetryAfter(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := petstoretest.NewServer(t, petstoretest.WithoutListener(), petstoretest.WithClock(clk.Now),
		petstoretest.WithPets(petstore.NewPet{Name: "Rex", CategoryID: 1}))
	c, rt := loggedCachingClient(t, srv, clk)
	ctx := context.Background()
	if _, err := c.GetPet(ctx, 1); err != nil { // remembered: the next fetches are conditional
		t.Fatal(err)
	}
	// The first conditional fetch is refused with a Retry-After of 1 s,
	// the second, answered before it, by the allowance's ban.
	srv.Inject(petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1, Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"1"}}})
	srv.Inject(petstoretest.Fault{Route: "GET /pets/{petId}", Times: 1,
		Error:  &petstore.Error{Code: petstore.CodeAPIKeyBanned, Message: "banned for too many conditional requests"},
		Header: http.Header{"Retry-After": {"900"}}})
	var started bool
	rt.meanwhile = func(req *http.Request, resp *http.Response) bool {
		if started || resp.StatusCode != http.StatusTooManyRequests || req.Header.Get("If-None-Match") == "" {
			return false
		}
		started = true
		if _, err := c.GetPet(ctx, 1); err != nil { // sent again in full: the pet
			t.Errorf("the fetch answered first: %v", err)
		}
		return true
	}
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatalf("the fetch answered last: %v", err)
	}
	if !started {
		t.Fatal("no conditional fetch was refused")
	}

	clk.Advance(time.Minute) // past the 1 s, within the ban's 15 minutes
	n := len(srv.Requests())
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if inm := srv.Requests()[n].Header.Get("If-None-Match"); inm != "" {
		t.Fatalf("a fetch 1 minute into the allowance's 15-minute ban was conditional (If-None-Match %s)", inm)
	}
	clk.Advance(15 * time.Minute)
	n = len(srv.Requests())
	if _, err := c.GetPet(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if inm := srv.Requests()[n].Header.Get("If-None-Match"); inm == "" {
		t.Fatal("a fetch after the ban was not conditional")
	}
}
