package httpx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// Every page and pet has a strong ETag; naming it in If-None-Match gets
// 304 with no body, until a create changes the page.
func TestNotModified(t *testing.T) {
	e := newEnv(t, nil)
	pet := e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1})[0]
	for _, path := range []string{"/v1/pets", "/v1/pets?limit=1&status=available", "/v1/pets/" + strconv.FormatInt(pet.ID, 10)} {
		t.Run(path, func(t *testing.T) {
			first := e.do(t, e.req("GET", path, ""))
			etag := first.Header.Get("ETag")
			if first.Status != 200 || len(etag) < 3 || etag[0] != '"' {
				t.Fatalf("GET: %d with ETag %q, want 200 with a strong ETag", first.Status, etag)
			}
			for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
				r := e.req("GET", path, "")
				r.Header.Set("If-None-Match", inm)
				res := e.do(t, r)
				if res.Status != http.StatusNotModified || len(res.Body) != 0 || res.Header.Get("ETag") != etag {
					t.Fatalf("If-None-Match %s: %d %q ETag %q, want 304, no body, the same ETag", inm, res.Status, res.Body, res.Header.Get("ETag"))
				}
			}
			r := e.req("GET", path, "")
			r.Header.Set("If-None-Match", `"other"`)
			if res := e.do(t, r); res.Status != 200 || string(res.Body) != string(first.Body) {
				t.Fatalf("another ETag: %d %s, want 200 and the body", res.Status, res.Body)
			}
		})
	}
	list := e.do(t, e.req("GET", "/v1/pets", ""))
	created := e.do(t, e.req("POST", "/v1/pets", `{"name":"Tom","categoryId":1}`))
	if created.Status != 201 || created.Header.Get("ETag") == "" {
		t.Fatalf("create: %d ETag %q", created.Status, created.Header.Get("ETag"))
	}
	r := e.req("GET", "/v1/pets", "")
	r.Header.Set("If-None-Match", list.Header.Get("ETag"))
	if res := e.do(t, r); res.Status != 200 || res.Header.Get("ETag") == list.Header.Get("ETag") {
		t.Fatalf("the page after a create: %d ETag %q, want 200 with a new ETag", res.Status, res.Header.Get("ETag"))
	}
}

// A 304 spends none of the plan's quota, though it reports the limits;
// conditional requests spend an allowance of their own, ten times the
// plan's, so a loop of them is still stopped. One answered in full spends
// the plan's quota too.
func TestConditionalRequestsSpendTheirOwnAllowance(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	first := e.get(t)
	wantHeaders(t, first, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"})
	conditional := func(etag string) response {
		r := e.req("GET", "/v1/pets", "")
		r.Header.Set("If-None-Match", etag)
		return do(t, e.h, "/v1", r)
	}
	for i := range 600 {
		res := conditional(first.Header.Get("ETag"))
		if res.Status != http.StatusNotModified {
			t.Fatalf("conditional request %d: %d %s", i+1, res.Status, res.Body)
		}
		if i == 0 {
			wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "599"})
		}
	}
	wantStatus(t, conditional(first.Header.Get("ETag")), http.StatusTooManyRequests, petstore.CodeRateLimited)
	wantHeaders(t, e.get(t), map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "58"})

	// A conditional request answered in full is charged to the plan: the
	// next answer says one fewer.
	e.clock.Advance(61e9) // a new minute for both allowances
	full := conditional(`"stale"`)
	if full.Status != 200 || len(full.Body) == 0 {
		t.Fatalf("conditional request on a changed page: %d", full.Status)
	}
	wantHeaders(t, full, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"})
	wantHeaders(t, e.get(t), map[string]string{"X-RateLimit-Remaining": "58"})
}

// An If-None-Match spread over two header lines is one list (RFC 9110
// §5.3), empty items ignored: a request whose first line is empty is
// conditional all the same, answered 304 on the allowance.
func TestIfNoneMatchOverTwoLinesIsConditional(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	first := e.get(t)
	r := e.req("GET", "/v1/pets", "")
	r.Header["If-None-Match"] = []string{"", " , " + first.Header.Get("ETag")}
	res := do(t, e.h, "/v1", r)
	if res.Status != http.StatusNotModified {
		t.Fatalf("If-None-Match over two lines naming the page: %d, want 304", res.Status)
	}
	wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "599"})
	wantHeaders(t, e.get(t), map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "58"})
}

// failingPets fails every read the way a store does while its database is
// down.
type failingPets struct{ petstore.PetService }

func (failingPets) ListPets(context.Context, petstore.PetFilter) (petstore.PetPage, error) {
	return petstore.PetPage{}, &petstore.Error{Code: petstore.CodeUnavailable, Message: "the database is unavailable; try again later"}
}

// A request the server could not serve (a store's 503) spends no quota.
func TestUnavailableSpendsNoQuota(t *testing.T) {
	for _, traced := range []bool{false, true} {
		down := false
		e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) {
			c.Service = switchable{c.Service, &down}
			if traced {
				c.TracerProvider = noop.NewTracerProvider()
			}
		})
		wantHeaders(t, e.get(t), map[string]string{"X-RateLimit-Remaining": "59"})
		down = true
		for range 3 {
			wantStatus(t, e.get(t), http.StatusServiceUnavailable, petstore.CodeUnavailable)
		}
		down = false
		wantHeaders(t, e.get(t), map[string]string{"X-RateLimit-Remaining": "58"})
	}
}

// switchable is a PetService whose reads fail while *down.
type switchable struct {
	petstore.PetService
	down *bool
}

func (s switchable) ListPets(ctx context.Context, f petstore.PetFilter) (petstore.PetPage, error) {
	if *s.down {
		return failingPets{}.ListPets(ctx, f)
	}
	return s.PetService.ListPets(ctx, f)
}

// recordingFeed is a feed that only records what is published.
type recordingFeed struct {
	mu        sync.Mutex
	published []changefeed.Change
}

func (f *recordingFeed) Publish(_ context.Context, c changefeed.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, c)
	return nil
}

// wait returns what was published once there is something, failing t
// after 5 s.
func (f *recordingFeed) wait(t *testing.T) []changefeed.Change {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		got := append([]changefeed.Change(nil), f.published...)
		f.mu.Unlock()
		if len(got) > 0 {
			return got
		}
	}
	t.Fatal("nothing published")
	return nil
}

func (f *recordingFeed) Subscribe(ctx context.Context, _ func(changefeed.Change)) error {
	<-ctx.Done()
	return ctx.Err()
}

// With a feed, a cache keeps nothing until the feed is live and while it
// is lost, empties itself on another process's create, and publishes this
// process's creates.
func TestCacheFollowsTheFeed(t *testing.T) {
	feed := &recordingFeed{}
	cache := httpx.NewCache(feed)
	e := newEnv(t, func(c *httpx.Config) { c.Cache = cache })
	e.cache = nil // the other process's writes below reach this one only by the feed
	pet := e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1})[0]
	names := func() string {
		t.Helper()
		res := e.do(t, e.req("GET", "/v1/pets", ""))
		if res.Status != 200 {
			t.Fatalf("list: %d %s", res.Status, res.Body)
		}
		return string(res.Body)
	}
	other := func(name string) { // a create by another process
		t.Helper()
		p := e.seed(t, petstore.NewPet{Name: name, CategoryID: 1})[0]
		cache.Apply(changefeed.Change{Kind: changefeed.KindPets, ID: strconv.FormatInt(p.ID, 10)})
	}
	before := names()
	e.seed(t, petstore.NewPet{Name: "Unseen", CategoryID: 1}) // not on the feed
	if names() == before {
		t.Fatal("a page was kept before the feed was live")
	}
	cache.Apply(changefeed.Change{Kind: changefeed.KindLive})
	kept := names()
	e.seed(t, petstore.NewPet{Name: "Hidden", CategoryID: 1})
	if names() != kept {
		t.Fatal("the page was not kept while the feed was live")
	}
	other("Tom")
	if got := names(); got == kept {
		t.Fatal("another process's create, delivered by the feed, did not empty the cache")
	}
	cache.Apply(changefeed.Change{Kind: changefeed.KindLost})
	lost := names()
	e.seed(t, petstore.NewPet{Name: "Lost", CategoryID: 1})
	if names() == lost {
		t.Fatal("a page was kept while the feed was lost")
	}
	res := e.do(t, e.req("POST", "/v1/pets", `{"name":"Mine","categoryId":1,"status":"sold"}`))
	var mine petstore.Pet
	if res.Status != 201 || json.Unmarshal(res.Body, &mine) != nil {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	want := changefeed.Change{Kind: changefeed.KindPets, ID: strconv.FormatInt(mine.ID, 10) + ":sold"}
	if got := feed.wait(t); len(got) != 1 || got[0] != want || mine.ID == pet.ID {
		t.Fatalf("published %v, want %v: the one create of this process, with its status", got, want)
	}
}

// A process reads its own writes: however many reads and creates run at
// once, the page read after a create has returned holds the pet created.
func TestCacheReadsItsOwnWrites(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 80)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				name := fmt.Sprintf("pet %d-%d", g, i)
				res, _ := serve(e.h, e.req("POST", "/v1/pets", `{"name":"`+name+`","categoryId":1}`))
				if res.Status != 201 {
					errs <- fmt.Sprintf("create %s: %d", name, res.Status)
					return
				}
				page, _ := serve(e.h, e.req("GET", "/v1/pets?limit=100", ""))
				if !strings.Contains(string(page.Body), `"`+name+`"`) {
					errs <- fmt.Sprintf("the page read after creating %s lacks it", name)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Once the plan's quota is spent, a conditional request that would be
// answered in full is 429, with none of the answer's headers, while one
// answered 304 still is.
func TestConditionalRequestsPastThePlansQuota(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(_ *httpx.Config, l *ratelimit.Config) { l.BanPolicy.Disabled = true })
	var last response
	for range 60 {
		last = e.get(t)
	}
	wantHeaders(t, last, map[string]string{"X-RateLimit-Remaining": "0"})
	r := e.req("GET", "/v1/pets", "")
	r.Header.Set("If-None-Match", `"stale"`)
	res := do(t, e.h, "/v1", r)
	wantStatus(t, res, http.StatusTooManyRequests, petstore.CodeRateLimited)
	if res.Header.Get("ETag") != "" || res.Header.Get("Retry-After") == "" {
		t.Fatalf("429 headers: %v", res.Header)
	}
	r = e.req("GET", "/v1/pets", "")
	r.Header.Set("If-None-Match", last.Header.Get("ETag"))
	if res := do(t, e.h, "/v1", r); res.Status != http.StatusNotModified {
		t.Fatalf("conditional request on an unchanged page past the quota: %d %s", res.Status, res.Body)
	}
}

// A key banned on its plan's quota still gets its 304s: the conditional
// allowance has its own strikes and bans (docs/rate-limits.md).
func TestBannedKeyStillGetsNotModified(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	first := e.get(t)
	for range 59 {
		wantStatus(t, e.get(t), http.StatusOK, "")
	}
	for range 31 { // 429s a second apart: strikes, past the grace
		e.clock.Advance(time.Second)
		e.get(t)
	}
	wantStatus(t, e.get(t), http.StatusTooManyRequests, petstore.CodeAPIKeyBanned)
	r := e.req("GET", "/v1/pets", "")
	r.Header.Set("If-None-Match", first.Header.Get("ETag"))
	res := do(t, e.h, "/v1", r)
	if res.Status != http.StatusNotModified || res.Header.Get("X-RateLimit-Limit") != "600" {
		t.Fatalf("conditional request of a key banned on its plan: %d, X-RateLimit-Limit %q; want 304 on the allowance of 600", res.Status, res.Header.Get("X-RateLimit-Limit"))
	}
}

// An Enterprise key's limits may be as large as an int64 holds; its
// conditional allowance, ten times them, is then as large as one holds,
// not a negative overflow that fails every conditional request with 503.
func TestConditionalAllowanceOfHugeLimits(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), nil)
	huge := petstore.Limits{PerMinute: 1_000_000_000_000_000_000, PerDay: math.MaxInt64}
	if _, err := e.keys.SetPlan(context.Background(), e.key.ID, petstore.PlanEnterprise, huge); err != nil {
		t.Fatal(err)
	}
	first := e.get(t)
	wantStatus(t, first, http.StatusOK, "")
	r := e.req("GET", "/v1/pets", "")
	r.Header.Set("If-None-Match", first.Header.Get("ETag"))
	res := do(t, e.h, "/v1", r)
	if res.Status != http.StatusNotModified {
		t.Fatalf("conditional request of a key with limits %+v: %d %s, want 304", huge, res.Status, res.Body)
	}
	wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": strconv.FormatInt(math.MaxInt64, 10)})
}

// A key banned on its conditional allowance still makes unconditional
// requests, on its plan's quota (docs/rate-limits.md), with the store in
// memory and in Redis.
func TestKeyBannedOnTheAllowanceStillMakesUnconditionalRequests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) ratelimit.Store
	}{
		{"memory", func(*testing.T) ratelimit.Store { return ratelimit.NewMemoryStore() }},
		{"redis", func(t *testing.T) ratelimit.Store {
			c := testenv.RedisClient(t)
			return redislimit.New(c, testenv.RedisPrefix(t, c, "httpx"), redislimit.CallerClock())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRLEnv(t, tc.store(t), nil)
			first := e.get(t)
			conditional := func() response {
				r := e.req("GET", "/v1/pets", "")
				r.Header.Set("If-None-Match", first.Header.Get("ETag"))
				return do(t, e.h, "/v1", r)
			}
			for i := range 600 {
				if res := conditional(); res.Status != http.StatusNotModified {
					t.Fatalf("conditional request %d: %d %s", i+1, res.Status, res.Body)
				}
			}
			for range 30 { // 429s a second apart: strikes, past the grace
				e.clock.Advance(time.Second)
				wantStatus(t, conditional(), http.StatusTooManyRequests, petstore.CodeRateLimited)
			}
			e.clock.Advance(time.Second)
			res := conditional() // the 31st strike
			wantStatus(t, res, http.StatusTooManyRequests, petstore.CodeAPIKeyBanned)
			wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "600", "Retry-After": "900"})
			res = e.get(t)
			wantStatus(t, res, http.StatusOK, "")
			wantHeaders(t, res, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "58"})
		})
	}
}

// A 304 for a page that has a next one carries the page's Link, as its
// 200 does, so a client or cache that revalidates still finds the next
// page; and the document declares it.
func TestNotModifiedPageKeepsItsNextLink(t *testing.T) {
	e := newEnv(t, nil)
	e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1})
	first := e.do(t, e.req("GET", "/v1/pets?limit=1", ""))
	link := first.Header.Get("Link")
	if first.Status != 200 || !strings.Contains(link, `rel="next"`) {
		t.Fatalf("GET: %d with Link %q, want 200 with a next link", first.Status, link)
	}
	r := e.req("GET", "/v1/pets?limit=1", "")
	r.Header.Set("If-None-Match", first.Header.Get("ETag"))
	res := e.do(t, r)
	if got := res.Header.Get("Link"); res.Status != http.StatusNotModified || got != link {
		t.Fatalf("If-None-Match: %d with Link %q, want 304 with %q", res.Status, got, link)
	}
}

// A full last page whose body stays the same when a pet is created after
// it gains a next Link: that answer changed, so its ETag does, and a
// client revalidating the page (polling for new pets) gets 200 with the
// Link, not a 304 telling it the page it holds, without a next one, is
// current.
func TestPageETagChangesWithItsNextLink(t *testing.T) {
	e := newEnv(t, nil)
	e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1}, petstore.NewPet{Name: "Tom", CategoryID: 1})
	first := e.do(t, e.req("GET", "/v1/pets?limit=2", ""))
	if first.Status != 200 || first.Header.Get("Link") != "" {
		t.Fatalf("GET: %d with Link %q, want 200 and no next page", first.Status, first.Header.Get("Link"))
	}
	if res := e.do(t, e.req("POST", "/v1/pets", `{"name":"Kit","categoryId":1}`)); res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	r := e.req("GET", "/v1/pets?limit=2", "")
	r.Header.Set("If-None-Match", first.Header.Get("ETag"))
	res := e.do(t, r)
	if res.Status != 200 || !strings.Contains(res.Header.Get("Link"), `rel="next"`) {
		t.Fatalf("revalidated after a create: %d with Link %q, want 200 with a next link", res.Status, res.Header.Get("Link"))
	}
	if string(res.Body) != string(first.Body) || res.Header.Get("ETag") == first.Header.Get("ETag") {
		t.Fatalf("body %s ETag %s, want the same body %s under a new ETag", res.Body, res.Header.Get("ETag"), first.Body)
	}
}

// A conditional request answered in full once the plan's quota is spent
// is 429 without the handler's headers, but with those the server's own
// middleware set around the API (docs/api.md: the API leaves them alone):
// a browser reads a 429 only with its CORS headers.
func TestConditionalRefusalKeepsTheMiddlewaresHeaders(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(_ *httpx.Config, l *ratelimit.Config) { l.BanPolicy.Disabled = true })
	cors := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "https://app.example")
		w.Header().Set("Access-Control-Expose-Headers", "Retry-After, X-RateLimit-Reset")
		e.h.ServeHTTP(w, r)
	}
	srv := httptest.NewServer(http.HandlerFunc(cors))
	t.Cleanup(srv.Close)
	get := func(inm string) *http.Response {
		t.Helper()
		r := e.req("GET", srv.URL+"/v1/pets", "")
		r.RequestURI = ""
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for range 60 {
		get("")
	}
	res := get(`"stale"`)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("ETag") != "" {
		t.Fatalf("conditional request past the quota: %d, ETag %q; want 429 without the page's ETag", res.StatusCode, res.Header.Get("ETag"))
	}
	for h, want := range map[string]string{"Access-Control-Allow-Origin": "https://app.example", "Access-Control-Expose-Headers": "Retry-After, X-RateLimit-Reset"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("429: %s = %q, want the middleware's %q", h, got, want)
		}
	}
}

// lostReplyPets is a real memory store whose creates commit and then
// answer unavailable, as a database's do when the commit's reply is lost.
type lostReplyPets struct{ *memstore.Store }

func (s lostReplyPets) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	if _, err := s.Store.CreatePet(ctx, p); err != nil {
		return petstore.Pet{}, err
	}
	return petstore.Pet{}, petstore.Errorf(petstore.CodeUnavailable, "the database is unavailable; try again later")
}

// A create answered 503 may have committed all the same: the pages read
// after it hold the pet if it did, so that a client that checks before
// it retries does not create it twice.
func TestCacheAfterACreateWithItsReplyLost(t *testing.T) {
	e := newEnv(t, nil)
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(lostReplyPets{e.store}), Auth: petstore.NewKeys(e.store), Cache: httpx.NewCache(nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	call := func(method, body string) (int, string) {
		t.Helper()
		r := e.req(method, srv.URL+"/v1/pets", body)
		r.RequestURI = ""
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if _, page := call("GET", ""); strings.TrimSpace(page) != "[]" {
		t.Fatalf("first page = %s, want []", page)
	}
	if status, body := call("POST", `{"name":"Rex","categoryId":1}`); status != 503 {
		t.Fatalf("create = %d %s, want 503", status, body)
	}
	if _, page := call("GET", ""); !strings.Contains(page, `"Rex"`) {
		t.Fatalf("page after the create that committed = %s, want Rex in it", page)
	}
}

// A create answered 503 may have committed: the other processes are told,
// as of a create answered 201, and drop the pages it may have changed.
func TestCreateWithItsReplyLostReachesTheOthers(t *testing.T) {
	e := newEnv(t, nil)
	process := func(store petstore.PetStore, feed changefeed.Feed) (http.Handler, *httpx.Cache) {
		t.Helper()
		cache := httpx.NewCache(feed)
		cache.Apply(changefeed.Change{Kind: changefeed.KindLive})
		h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(e.store), Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return h, cache
	}
	fromA := &recordingFeed{}
	a, _ := process(lostReplyPets{e.store}, fromA)
	b, cacheB := process(e.store, &recordingFeed{})
	page := func() string {
		t.Helper()
		res, _ := serve(b, e.req("GET", "/v1/pets", ""))
		if res.Status != 200 {
			t.Fatalf("list on b: %d %s", res.Status, res.Body)
		}
		return string(res.Body)
	}
	if got := page(); strings.TrimSpace(got) != "[]" {
		t.Fatalf("b's first page = %s, want []", got)
	}
	if res, _ := serve(a, e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`)); res.Status != 503 {
		t.Fatalf("create on a = %d %s, want 503", res.Status, res.Body)
	}
	for _, ch := range fromA.wait(t) {
		cacheB.Apply(ch)
	}
	if got := page(); !strings.Contains(got, `"Rex"`) {
		t.Fatalf("b's page after a's create that committed = %s, want Rex in it", got)
	}
}
