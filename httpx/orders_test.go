package httpx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/ratelimit"
)

// newOrdersEnv is newEnv with the orders operations and Idempotency-Key
// records on, and one pet to order.
func newOrdersEnv(t testing.TB) (*env, petstore.Pet) {
	t.Helper()
	e := newEnv(t, nil)
	h, err := httpx.New(httpx.Config{
		Service: petstore.NewService(e.store), Auth: petstore.NewKeys(e.store),
		Orders: petstore.NewOrderService(e.store), Idempotency: e.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e, e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1})[0]
}

// otherProjectKey makes a key of a new project on e's store.
func otherProjectKey(t testing.TB, e *env) string {
	t.Helper()
	key, secret, err := petstore.NewKeys(e.store).Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if key.ProjectID == e.key.ProjectID {
		t.Fatal("the new key shares the project")
	}
	return secret
}

func (r response) order(t testing.TB) petstore.Order {
	t.Helper()
	var o petstore.Order
	if err := json.Unmarshal(r.Body, &o); err != nil {
		t.Fatalf("body is not an Order: %q (%v)", r.Body, err)
	}
	return o
}

func (r response) orders(t testing.TB) []petstore.Order {
	t.Helper()
	var os []petstore.Order
	if err := json.Unmarshal(r.Body, &os); err != nil || os == nil {
		t.Fatalf("body is not an array of Order: %q (%v)", r.Body, err)
	}
	return os
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func wantBeta(t testing.TB, r response) {
	t.Helper()
	if got := r.Header.Get(httpx.StabilityHeader); got != "beta" {
		t.Fatalf("%s = %q, want beta (status %d)", httpx.StabilityHeader, got, r.Status)
	}
}

func TestOrdersLifecycle(t *testing.T) {
	e, pet := newOrdersEnv(t)
	petID := itoa(pet.ID)

	res := e.do(t, e.req("POST", "/v1/store/orders", `{"petId":`+petID+`}`))
	if res.Status != 201 {
		t.Fatalf("POST: %d %s", res.Status, res.Body)
	}
	wantBeta(t, res)
	created := res.order(t)
	want := petstore.Order{ID: created.ID, PetID: pet.ID, Quantity: 1, Status: petstore.OrderPlaced}
	if created != want {
		t.Fatalf("created %+v, want the defaults %+v", created, want)
	}
	if strings.Contains(string(res.Body), "shipDate") {
		t.Fatalf("body %s has a shipDate, want it omitted", res.Body)
	}
	loc := res.Header.Get("Location")
	if loc != "/v1/store/orders/"+itoa(created.ID) {
		t.Fatalf("Location = %q", loc)
	}

	res = e.do(t, e.req("GET", loc, ""))
	wantBeta(t, res)
	if res.Status != 200 || res.order(t) != created {
		t.Fatalf("GET %s: %d %s", loc, res.Status, res.Body)
	}

	res = e.do(t, e.req("POST", "/v1/store/orders",
		`{"petId":`+petID+`,"quantity":3,"shipDate":"2027-01-02T03:04:05.123456789+02:00","status":"approved","complete":true}`))
	if res.Status != 201 {
		t.Fatalf("POST: %d %s", res.Status, res.Body)
	}
	var raw map[string]any
	if err := json.Unmarshal(res.Body, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["shipDate"] != "2027-01-02T01:04:05.123456Z" || raw["quantity"] != 3.0 || raw["status"] != "approved" || raw["complete"] != true {
		t.Fatalf("created %s; want the fields sent, shipDate in UTC to the microsecond", res.Body)
	}

	res = e.do(t, e.req("GET", "/v1/store/orders", ""))
	wantBeta(t, res)
	if got := res.orders(t); res.Status != 200 || len(got) != 2 || got[0] != created {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	res = e.do(t, e.req("GET", "/v1/store/orders?status=approved", ""))
	if got := res.orders(t); len(got) != 1 || got[0].Status != petstore.OrderApproved {
		t.Fatalf("list approved: %s", res.Body)
	}
	res = e.do(t, e.req("GET", "/v1/store/orders/999", ""))
	wantBeta(t, res)
	if res.Status != 404 || res.errorBody(t).Code != petstore.CodeNotFound {
		t.Fatalf("GET missing: %d %s", res.Status, res.Body)
	}
}

func TestOrdersProjectIsolation(t *testing.T) {
	e, pet := newOrdersEnv(t)
	other := otherProjectKey(t, e)
	mine := e.do(t, e.req("POST", "/v1/store/orders", `{"petId":`+itoa(pet.ID)+`}`)).order(t)
	theirs := e.do(t, apitest.AuthedReq(other, "POST", "/v1/store/orders", `{"petId":`+itoa(pet.ID)+`}`)).order(t)

	res := e.do(t, apitest.AuthedReq(other, "GET", "/v1/store/orders/"+itoa(mine.ID), ""))
	wantBeta(t, res)
	if res.Status != 404 || res.errorBody(t).Code != petstore.CodeNotFound {
		t.Fatalf("other project's GET: %d %s, want 404", res.Status, res.Body)
	}
	for secret, want := range map[string]int64{e.secret: mine.ID, other: theirs.ID} {
		got := e.do(t, apitest.AuthedReq(secret, "GET", "/v1/store/orders", "")).orders(t)
		if len(got) != 1 || got[0].ID != want {
			t.Fatalf("list = %+v, want only order %d", got, want)
		}
	}
	// A third project has none, not even on a page after both.
	third := otherProjectKey(t, e)
	if got := e.do(t, apitest.AuthedReq(third, "GET", "/v1/store/orders", "")).orders(t); len(got) != 0 {
		t.Fatalf("third project lists %+v", got)
	}
}

func TestCreateOrderInvalid(t *testing.T) {
	e, pet := newOrdersEnv(t)
	id := itoa(pet.ID)
	tests := []struct{ name, body, field string }{
		{"missing petId", `{}`, "petId"},
		{"petId null", `{"petId":null}`, "petId"},
		{"petId string", `{"petId":"` + id + `"}`, "petId"},
		{"petId fraction", `{"petId":1.5}`, "petId"},
		{"petId overflow", `{"petId":9223372036854775808}`, "petId"},
		{"petId zero", `{"petId":0}`, "petId"},
		{"no such pet", `{"petId":987654}`, "petId"},
		{"quantity zero", `{"petId":` + id + `,"quantity":0}`, "quantity"},
		{"quantity negative", `{"petId":` + id + `,"quantity":-1}`, "quantity"},
		{"quantity over int32", `{"petId":` + id + `,"quantity":2147483648}`, "quantity"},
		{"quantity null", `{"petId":` + id + `,"quantity":null}`, "quantity"},
		{"quantity string", `{"petId":` + id + `,"quantity":"2"}`, "quantity"},
		{"shipDate empty", `{"petId":` + id + `,"shipDate":""}`, "shipDate"},
		{"shipDate null", `{"petId":` + id + `,"shipDate":null}`, "shipDate"},
		{"shipDate date only", `{"petId":` + id + `,"shipDate":"2027-01-02"}`, "shipDate"},
		{"shipDate no zone", `{"petId":` + id + `,"shipDate":"2027-01-02T03:04:05"}`, "shipDate"},
		{"shipDate zero", `{"petId":` + id + `,"shipDate":"0001-01-01T00:00:00Z"}`, "shipDate"},
		{"shipDate zero to the microsecond", `{"petId":` + id + `,"shipDate":"0001-01-01T00:00:00.0000001Z"}`, "shipDate"},
		{"shipDate comma before the fraction", `{"petId":` + id + `,"shipDate":"2027-01-02T03:04:05,5Z"}`, "shipDate"},
		{"shipDate offset of 24 hours", `{"petId":` + id + `,"shipDate":"2027-01-02T03:04:05+24:00"}`, "shipDate"},
		{"shipDate past year 9999 in UTC", `{"petId":` + id + `,"shipDate":"9999-12-31T23:00:00-05:00"}`, "shipDate"},
		{"shipDate number", `{"petId":` + id + `,"shipDate":1700000000}`, "shipDate"},
		{"status empty", `{"petId":` + id + `,"status":""}`, "status"},
		{"status null", `{"petId":` + id + `,"status":null}`, "status"},
		{"status upper case", `{"petId":` + id + `,"status":"PLACED"}`, "status"},
		{"status unknown", `{"petId":` + id + `,"status":"shipped"}`, "status"},
		{"status invalid UTF-8", "{\"petId\":" + id + ",\"status\":\"placed\xff\"}", "status"},
		{"complete null", `{"petId":` + id + `,"complete":null}`, "complete"},
		{"complete string", `{"petId":` + id + `,"complete":"true"}`, "complete"},
		{"complete number", `{"petId":` + id + `,"complete":1}`, "complete"},
		// A member named as a field in another case alone is that field
		// to case-insensitive readers (encoding/json): refused, as on pets.
		{"PetId in another case", `{"PetId":` + id + `}`, "petId"},
		{"quantity in another case", `{"petId":` + id + `,"Quantity":5}`, "case-sensitive"},
		{"status in another case", `{"petId":` + id + `,"STATUS":"approved"}`, "case-sensitive"},
		{"shipDate in another case", `{"petId":` + id + `,"shipdate":"2027-01-02T03:04:05Z"}`, "case-sensitive"},
		{"complete in another case", `{"petId":` + id + `,"Complete":true}`, "case-sensitive"},
		{"array", `[]`, "object"},
		{"null", `null`, "object"},
		{"two objects", `{"petId":` + id + `}{}`, "nothing after"},
		{"broken JSON", `{"petId":`, "JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(t, e.req("POST", "/v1/store/orders", tt.body))
			wantBeta(t, res)
			if res.Status != 400 {
				t.Fatalf("status = %d, want 400: %s", res.Status, res.Body)
			}
			if e := res.errorBody(t); e.Code != petstore.CodeInvalidRequest || !strings.Contains(e.Message, tt.field) {
				t.Fatalf("error %+v does not name %q", e, tt.field)
			}
		})
	}
	t.Run("unknown fields ignored, duplicates refused, as on pets", func(t *testing.T) {
		res := e.do(t, e.req("POST", "/v1/store/orders", `{"id":77,"petId":`+id+`,"quantity":5,"note":"x","\u00e9":1}`))
		if res.Status != 201 {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		if o := res.order(t); o.ID == 77 || o.Quantity != 5 {
			t.Fatalf("created %+v; want a new id and quantity 5", o)
		}
		// A repeated member means different orders to different readers
		// (the first or the last wins): refused, as on pets.
		for _, body := range []string{`{"petId":` + id + `,"quantity":2,"quantity":5}`, `{"petId":` + id + `,"quantity":2,"Quantity":5}`} {
			if res := e.do(t, e.req("POST", "/v1/store/orders", body)); res.Status != 400 || !strings.Contains(string(res.Body), "unique") {
				t.Fatalf("%s: %d %s, want 400 naming the repeated member", body, res.Status, res.Body)
			}
		}
	})
}

func TestOrdersCheckOrder(t *testing.T) {
	e, pet := newOrdersEnv(t)
	body := `{"petId":` + itoa(pet.ID) + `}`
	big := `{"petId":` + itoa(pet.ID) + `,"note":"` + strings.Repeat("x", httpx.MaxBodyBytes) + `"}`
	tests := []struct {
		name, method, path, secret, contentType, body string
		want                                          int
		beta                                          bool
		allow                                         string
	}{
		{"no key", "POST", "/v1/store/orders", "", "text/plain", "x", 401, true, ""},
		{"no key, one order", "GET", "/v1/store/orders/1", "", "", "", 401, true, ""},
		{"no key, unknown path", "GET", "/v1/store/orders/1/x", "", "", "", 401, false, ""},
		{"unknown path", "GET", "/v1/store/orders/1/x", e.secret, "", "", 404, false, ""},
		{"trailing slash", "GET", "/v1/store/orders/", e.secret, "", "", 404, false, ""},
		{"longer name", "GET", "/v1/store/ordersx", e.secret, "", "", 404, false, ""},
		{"wrong method on list", "DELETE", "/v1/store/orders", e.secret, "text/plain", "x", 405, true, "GET, HEAD, POST"},
		{"wrong method on order", "PUT", "/v1/store/orders/1", e.secret, "application/json", body, 405, true, "GET, HEAD"},
		{"media type before size", "POST", "/v1/store/orders", e.secret, "text/plain", big, 415, true, ""},
		{"size before body", "POST", "/v1/store/orders", e.secret, "application/json", big, 413, true, ""},
		{"charset latin1", "POST", "/v1/store/orders", e.secret, "application/json; charset=latin1", body, 415, true, ""},
		{"bad id", "GET", "/v1/store/orders/x1", e.secret, "", "", 400, true, ""},
		{"bad limit", "GET", "/v1/store/orders?limit=0", e.secret, "", "", 400, true, ""},
		{"bad status", "GET", "/v1/store/orders?status=sold", e.secret, "", "", 400, true, ""},
		{"bad cursor", "GET", "/v1/store/orders?cursor=zz", e.secret, "", "", 400, true, ""},
		{"repeated limit", "GET", "/v1/store/orders?limit=1&limit=2", e.secret, "", "", 400, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *http.Request
			if tt.body == "" {
				r = httptest.NewRequest(tt.method, tt.path, nil)
			} else {
				r = httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
				r.Header.Set("Content-Type", tt.contentType)
			}
			if tt.secret != "" {
				r.Header.Set("Authorization", "Bearer "+tt.secret)
			}
			res := e.do(t, r)
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %.200s", res.Status, tt.want, res.Body)
			}
			if got := res.Header.Get(httpx.StabilityHeader) == "beta"; got != tt.beta {
				t.Fatalf("beta header %v, want %v", got, tt.beta)
			}
			if got := res.Header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
			res.errorBody(t)
		})
	}
}

func TestOrdersPagination(t *testing.T) {
	e, pet := newOrdersEnv(t)
	other := otherProjectKey(t, e)
	statuses := petstore.OrderStatuses()
	want := map[petstore.OrderStatus][]int64{}
	for i := range 25 {
		st := statuses[i%3]
		o := e.do(t, e.req("POST", "/v1/store/orders", `{"petId":`+itoa(pet.ID)+`,"status":"`+string(st)+`"}`)).order(t)
		want[st] = append(want[st], o.ID)
		want[""] = append(want[""], o.ID)
		// Another project's orders interleave with ours and never show.
		e.do(t, apitest.AuthedReq(other, "POST", "/v1/store/orders", `{"petId":`+itoa(pet.ID)+`,"status":"`+string(st)+`"}`))
	}
	next := regexp.MustCompile(`^<([^>]+)>; rel="next"$`)
	for _, tc := range []struct {
		status petstore.OrderStatus
		limit  string
	}{{"", ""}, {"", "5"}, {"", "7"}, {petstore.OrderPlaced, "3"}, {petstore.OrderApproved, "4"}, {petstore.OrderDelivered, "100"}} {
		target := "/v1/store/orders?limit=" + tc.limit
		if tc.limit == "" {
			target = "/v1/store/orders"
		}
		if tc.status != "" {
			target += "&status=" + string(tc.status)
		}
		var got []int64
		for pages := 0; target != ""; pages++ {
			if pages > 30 {
				t.Fatal("too many pages")
			}
			res := e.do(t, e.req("GET", target, ""))
			if res.Status != 200 {
				t.Fatalf("GET %s: %d %s", target, res.Status, res.Body)
			}
			for _, o := range res.orders(t) {
				got = append(got, o.ID)
			}
			target = ""
			if l := res.Header.Get("Link"); l != "" {
				m := next.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("Link = %q", l)
				}
				target = m[1]
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want[tc.status]) {
			t.Fatalf("status %q limit %q: walked %v, want %v", tc.status, tc.limit, got, want[tc.status])
		}
	}
}

func TestIdempotentCreateOrder(t *testing.T) {
	e, pet := newOrdersEnv(t)
	post := func(key, body string) response {
		r := e.req("POST", "/v1/store/orders", body)
		r.Header.Set("Idempotency-Key", key)
		return e.do(t, r)
	}
	id := itoa(pet.ID)
	first := post("k-1", `{"petId":`+id+`}`)
	// The same request: other whitespace, field order, and the defaults sent.
	second := post("k-1", "{\n \"status\": \"placed\", \"quantity\": 1,\n \"petId\": "+id+"}")
	if first.Status != 201 || second.Status != 201 || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("statuses %d, %d (replayed %q): %s", first.Status, second.Status, second.Header.Get("Idempotent-Replayed"), second.Body)
	}
	wantBeta(t, second)
	if string(first.Body) != string(second.Body) || first.Header.Get("Location") != second.Header.Get("Location") {
		t.Fatalf("replay differs: %s vs %s", first.Body, second.Body)
	}
	for _, h := range []string{"Content-Type", "ETag", "X-Content-Type-Options"} {
		if a, b := first.Header.Get(h), second.Header.Get(h); a != b {
			t.Errorf("%s: %q, then %q on the replay; want the first answer's", h, a, b)
		}
	}
	if got := e.do(t, e.req("GET", "/v1/store/orders", "")).orders(t); len(got) != 1 {
		t.Fatalf("%d orders, want 1", len(got))
	}
	if res := post("k-1", `{"petId":`+id+`,"quantity":2}`); res.Status != 422 || res.errorBody(t).Code != petstore.CodeIdempotencyKeyReused {
		t.Fatalf("other body: %d %s, want 422", res.Status, res.Body)
	}
	// The same key on the pets path is another request, not a replay.
	r := e.req("POST", "/v1/pets", `{"name":"Tom","categoryId":1}`)
	r.Header.Set("Idempotency-Key", "k-2")
	if res := e.do(t, r); res.Status != 201 {
		t.Fatalf("pet: %d %s", res.Status, res.Body)
	}
	if res := post("k-2", `{"petId":`+id+`}`); res.Status != 422 {
		t.Fatalf("order under a pet's key: %d %s, want 422", res.Status, res.Body)
	}
}

// TestOrdersOptional: without Config.Orders the paths are unknown (404,
// no beta header) and the document leaves them out; with it the document
// marks each orders operation beta and every pets operation stable.
func TestOrdersOptional(t *testing.T) {
	e := newEnv(t, nil)
	res, _ := serve(e.h, e.req("GET", "/v1/store/orders", ""))
	if res.Status != 404 || res.Header.Get(httpx.StabilityHeader) != "" {
		t.Fatalf("without Orders: %d %v", res.Status, res.Header)
	}
	res.errorBody(t)
	type doc struct {
		Paths map[string]map[string]struct {
			Stability string `json:"x-stability"`
		} `json:"paths"`
	}
	var without doc
	if err := json.Unmarshal(e.do(t, e.req("GET", "/v1/openapi.json", "")).Body, &without); err != nil {
		t.Fatal(err)
	}
	if _, ok := without.Paths["/store/orders"]; ok {
		t.Fatal("the document of a handler without Orders lists /store/orders")
	}

	eo, _ := newOrdersEnv(t)
	var with doc
	if err := json.Unmarshal(eo.do(t, eo.req("GET", "/v1/openapi.json", "")).Body, &with); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range with.Paths {
		for method, op := range ops {
			want := "stable"
			if strings.HasPrefix(path, "/store/orders") {
				want = "beta"
				n++
			}
			if op.Stability != want {
				t.Fatalf("%s %s: x-stability %q, want %q", method, path, op.Stability, want)
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d orders operations documented, want 3", n)
	}
}

func TestOrdersHead(t *testing.T) {
	e, pet := newOrdersEnv(t)
	o := e.do(t, e.req("POST", "/v1/store/orders", `{"petId":`+itoa(pet.ID)+`}`)).order(t)
	for _, path := range []string{"/v1/store/orders", "/v1/store/orders/" + itoa(o.ID)} {
		get := e.do(t, e.req("GET", path, ""))
		head, _ := serve(e.h, e.req("HEAD", path, ""))
		if head.Status != get.Status || len(head.Body) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(get.Body)) {
			t.Fatalf("HEAD %s: %d %q %v; GET %d", path, head.Status, head.Body, head.Header, get.Status)
		}
		wantBeta(t, head)
	}
}

// TestOrdersDocumentDeclaresTheirHeaders: every header an orders answer
// carries, its 401 and 429 (with X-API-Stability: beta) included, is one
// the OpenAPI document declares for that status, so a client generated
// from it can read them.
func TestOrdersDocumentDeclaresTheirHeaders(t *testing.T) {
	e := newRLEnv(t, ratelimit.NewMemoryStore(), func(c *httpx.Config, _ *ratelimit.Config) {
		c.Orders = petstore.NewOrderService(memstore.New()) // 401 and 429 come before the store
	})
	router := contractRouter(t, "/v1")
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"401 list", func() *http.Request { return apitest.AuthedReq("wrong", "GET", "/v1/store/orders", "") }, 401},
		{"401 one", func() *http.Request { return apitest.AuthedReq("wrong", "GET", "/v1/store/orders/1", "") }, 401},
		{"401 create", func() *http.Request { return apitest.AuthedReq("wrong", "POST", "/v1/store/orders", `{"petId":1}`) }, 401},
		{"429 list", func() *http.Request { return e.req("GET", "/v1/store/orders", "") }, 429},
		{"429 one", func() *http.Request { return e.req("GET", "/v1/store/orders/1", "") }, 429},
		{"429 create", func() *http.Request { return e.req("POST", "/v1/store/orders", `{"petId":1}`) }, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res response
			for range 100 { // the free plan allows 60 a minute
				if res = do(t, e.h, "/v1", tc.req()); res.Status == tc.want {
					break
				}
			}
			if res.Status != tc.want {
				t.Fatalf("status %d, want %d", res.Status, tc.want)
			}
			wantBeta(t, res)
			if u := undeclaredHeaders(t, router, tc.req(), res); len(u) > 0 {
				t.Fatalf("%d carries %v, which the document does not declare", res.Status, u)
			}
		})
	}
}
