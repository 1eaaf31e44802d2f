package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/testenv"
	"github.com/petstorekit/petstore/ratelimit"
)

// env is one API over a fresh memory store, with one valid Free key.
type env struct {
	h      http.Handler
	store  *memstore.Store
	secret string
	key    petstore.APIKey
	logs   *testenv.Buffer
	cache  *httpx.Cache
}

func newEnv(t testing.TB, mutate func(*httpx.Config)) *env {
	t.Helper()
	store := memstore.New()
	keys := petstore.NewKeys(store)
	key, secret, err := keys.Create(context.Background(), "", petstore.PlanFree, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	cfg := httpx.Config{
		Service: petstore.NewService(store),
		Cache:   httpx.NewCache(nil), // seed tells it of the pets it writes
		Auth:    keys,
		Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := httpx.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{h: h, store: store, secret: secret, key: key, logs: logs, cache: cfg.Cache}
}

// req builds a request authenticated with e's key; body "" means none.
func (e *env) req(method, target, body string) *http.Request {
	return apitest.AuthedReq(e.secret, method, target, body)
}

func (e *env) do(t testing.TB, r *http.Request) response { t.Helper(); return do(t, e.h, "/v1", r) }

func (e *env) seed(t testing.TB, pets ...petstore.NewPet) []petstore.Pet {
	t.Helper()
	var out []petstore.Pet
	for _, p := range pets {
		got, err := e.store.CreatePet(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
		if e.cache != nil {
			e.cache.Apply(changefeed.Change{Kind: changefeed.KindPets, ID: strconv.FormatInt(got.ID, 10)})
		}
	}
	return out
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name, method, path, auth, contentType string
		want                                  int
		challenge                             string
	}{
		{"no header", "GET", "/v1/pets", "", "", 401, `Bearer realm="petstore"`},
		{"other scheme", "GET", "/v1/pets", "Basic dXNlcjpwYXNz", "", 401, `Bearer realm="petstore"`},
		{"bearer without token", "GET", "/v1/pets", "Bearer ", "", 401, `Bearer realm="petstore"`},
		{"unknown key", "GET", "/v1/pets", "Bearer psk_nope", "", 401, `Bearer realm="petstore", error="invalid_token"`},
		{"unknown path without key", "GET", "/v1/nope", "", "", 401, `Bearer realm="petstore"`},
		{"wrong method without key", "DELETE", "/v1/pets", "", "", 401, `Bearer realm="petstore"`},
		{"bad body without key", "POST", "/v1/pets", "", "text/plain", 401, `Bearer realm="petstore"`},
		{"lower-case scheme", "GET", "/v1/pets", "bearer " + e.secret, "", 200, ""},
		{"upper-case scheme", "GET", "/v1/pets", "BEARER " + e.secret, "", 200, ""},
		{"openapi without key", "GET", "/v1/openapi.json", "", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader("x"))
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			res := e.do(t, r)
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.Status, tt.want, res.Body)
			}
			if got := res.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if tt.want == 401 {
				if e := res.errorBody(t); e.Code != petstore.CodeUnauthorized {
					t.Fatalf("code = %q", e.Code)
				}
			}
		})
	}
	if strings.Contains(e.logs.String(), e.secret) {
		t.Fatal("the API key appears in the logs")
	}
}

func TestListPets(t *testing.T) {
	e := newEnv(t, nil)
	empty := e.do(t, e.req("GET", "/v1/pets", ""))
	if got := strings.TrimSpace(string(empty.Body)); empty.Status != 200 || got != "[]" {
		t.Fatalf("empty list = %d %q, want 200 []", empty.Status, got)
	}
	statuses := []petstore.PetStatus{petstore.StatusAvailable, petstore.StatusPending, petstore.StatusSold, ""}
	for i := range 45 {
		e.seed(t, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: statuses[i%4]})
	}
	tests := []struct {
		name, query string
		wantN       int
		wantLink    string // "" means no Link
	}{
		{"default limit", "", 20, "</v1/pets?cursor=" + petstore.EncodeCursor(20) + "&limit=20>; rel=\"next\""},
		{"limit 5", "?limit=5", 5, "</v1/pets?cursor=" + petstore.EncodeCursor(5) + "&limit=5>; rel=\"next\""},
		{"limit 100 last page", "?limit=100", 45, ""},
		{"status", "?status=sold&limit=3", 3, "</v1/pets?cursor=" + petstore.EncodeCursor(11) + "&limit=3&status=sold>; rel=\"next\""},
		{"unknown parameter ignored", "?limit=1&color=red", 1, "</v1/pets?cursor=" + petstore.EncodeCursor(1) + "&limit=1>; rel=\"next\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(t, e.req("GET", "/v1/pets"+tt.query, ""))
			var pets []petstore.Pet
			if err := json.Unmarshal(res.Body, &pets); err != nil || res.Status != 200 {
				t.Fatalf("%d %s (%v)", res.Status, res.Body, err)
			}
			if len(pets) != tt.wantN {
				t.Fatalf("got %d pets, want %d", len(pets), tt.wantN)
			}
			if got := res.Header.Get("Link"); got != tt.wantLink {
				t.Fatalf("Link = %q, want %q", got, tt.wantLink)
			}
		})
	}
}

// CORS is the operator's middleware's to answer: the API leaves the
// Access-Control-* headers it set before the API ran as they were, so a
// browser script on another origin reads Link when the middleware
// exposes it.
func TestListPetsKeepsTheCORSMiddlewaresHeaders(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 3 {
		e.seed(t, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1})
	}
	cors := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Access-Control-Allow-Origin", "https://app.example")
			w.Header().Set("Access-Control-Expose-Headers", "Link, X-Request-Id, X-RateLimit-Remaining")
			next.ServeHTTP(w, r)
		})
	}
	w := httptest.NewRecorder()
	cors(e.h).ServeHTTP(w, e.req("GET", "/v1/pets?limit=2", ""))
	if w.Code != 200 || w.Header().Get("Link") == "" {
		t.Fatalf("%d, Link %q; want 200 with a next link", w.Code, w.Header().Get("Link"))
	}
	if got, want := w.Header().Get("Access-Control-Expose-Headers"), "Link, X-Request-Id, X-RateLimit-Remaining"; got != want {
		t.Fatalf("Access-Control-Expose-Headers = %q, want the middleware's %q", got, want)
	}
}

func TestListPetsInvalidQuery(t *testing.T) {
	e := newEnv(t, nil)
	for _, q := range []string{
		"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1.5", "limit=", "limit=%2B5", "limit=1&limit=2",
		"status=Available", "status=unknown", "status=", "cursor=", "cursor=garbage!", "cursor=" + strings.Repeat("A", 100),
		// Queries url.URL.Query would drop pairs of without a word, and a
		// cursor with a line break base64 decoding would skip.
		"limit=%", "limit=10;status=sold", "status=sold&limit=1%ZZ", "cursor=djE6MQ%0A",
	} {
		t.Run(q, func(t *testing.T) {
			res := e.do(t, e.req("GET", "/v1/pets?"+q, ""))
			if res.Status != 400 {
				t.Fatalf("status = %d, want 400: %s", res.Status, res.Body)
			}
			if got := res.errorBody(t); got.Code != petstore.CodeInvalidRequest {
				t.Fatalf("code = %q", got.Code)
			}
		})
	}
}

func TestCreatePet(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    int
		wantMessage             string // for errors: a substring
	}{
		{"valid", "application/json", `{"name":"Rex","categoryId":3,"status":"available"}`, 201, ""},
		{"charset", "application/json; charset=utf-8", `{"name":"Rex","categoryId":3}`, 201, ""},
		{"charset upper case", "application/json; charset=UTF-8", `{"name":"Rex","categoryId":3}`, 201, ""},
		{"client id and unknown fields ignored", "application/json", `{"id":999,"name":"Rex","categoryId":3,"color":"red"}`, 201, ""},
		{"no content type", "", `{"name":"Rex","categoryId":3}`, 415, "application/json"},
		{"text/plain", "text/plain", `{"name":"Rex","categoryId":3}`, 415, "application/json"},
		{"latin1", "application/json; charset=latin1", `{"name":"Rex","categoryId":3}`, 415, "application/json"},
		{"empty", "application/json", ``, 400, "JSON object"},
		{"null", "application/json", `null`, 400, "JSON object"},
		{"array", "application/json", `[{"name":"Rex","categoryId":3}]`, 400, "JSON object"},
		{"malformed", "application/json", `{"name":`, 400, "not valid JSON"},
		{"two objects", "application/json", `{"name":"Rex","categoryId":3}{}`, 400, "exactly one"},
		{"trailing garbage", "application/json", `{"name":"Rex","categoryId":3} x`, 400, "exactly one"},
		{"missing name", "application/json", `{"categoryId":3}`, 400, "name is required"},
		{"missing categoryId", "application/json", `{"name":"Rex"}`, 400, "categoryId is required"},
		{"null name", "application/json", `{"name":null,"categoryId":3}`, 400, "name must be a string"},
		{"number name", "application/json", `{"name":5,"categoryId":3}`, 400, "name must be a string"},
		{"blank name", "application/json", `{"name":"  ","categoryId":3}`, 400, "name must not be blank"},
		{"long name", "application/json", `{"name":"` + strings.Repeat("é", 256) + `","categoryId":3}`, 400, "at most 255"},
		{"string categoryId", "application/json", `{"name":"Rex","categoryId":"3"}`, 400, "categoryId must be an integer"},
		{"fractional categoryId", "application/json", `{"name":"Rex","categoryId":1.5}`, 400, "categoryId must be an integer"},
		{"null categoryId", "application/json", `{"name":"Rex","categoryId":null}`, 400, "categoryId must be an integer"},
		{"overflow categoryId", "application/json", `{"name":"Rex","categoryId":9223372036854775808}`, 400, "64 bits"},
		{"zero categoryId", "application/json", `{"name":"Rex","categoryId":0}`, 400, "categoryId must be an integer >= 1"},
		{"wrong-case status", "application/json", `{"name":"Rex","categoryId":3,"status":"Sold"}`, 400, "status must be one of"},
		{"null status", "application/json", `{"name":"Rex","categoryId":3,"status":null}`, 400, "status must be one of"},
		{"empty status", "application/json", `{"name":"Rex","categoryId":3,"status":""}`, 400, "status must be one of"},
		{"number status", "application/json", `{"name":"Rex","categoryId":3,"status":1}`, 400, "status must be one of"},
		{"too large", "application/json", `{"name":"Rex","categoryId":3,"pad":"` + strings.Repeat("x", httpx.MaxBodyBytes) + `"}`, 413, "1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := e.req("POST", "/v1/pets", tt.body)
			r.Header.Del("Content-Type")
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			res := e.do(t, r)
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.Status, tt.want, res.Body)
			}
			if tt.want != 201 {
				if got := res.errorBody(t); !strings.Contains(got.Message, tt.wantMessage) {
					t.Fatalf("message = %q, want it to contain %q", got.Message, tt.wantMessage)
				}
				if n := len(e.store.Pets()); n != 0 {
					t.Fatalf("%d pets stored after a refused create", n)
				}
				return
			}
			var pet petstore.Pet
			if err := json.Unmarshal(res.Body, &pet); err != nil {
				t.Fatal(err)
			}
			if pet.ID != 1 || pet.Name != "Rex" || pet.CategoryID != 3 {
				t.Fatalf("pet = %+v", pet)
			}
			if got, want := res.Header.Get("Location"), "/v1/pets/1"; got != want {
				t.Fatalf("Location = %q, want %q", got, want)
			}
			got := e.do(t, e.req("GET", "/v1/pets/1", ""))
			if got.Status != 200 || !bytes.Equal(got.Body, res.Body) {
				t.Fatalf("read back %d %s, want %s", got.Status, got.Body, res.Body)
			}
		})
	}
}

// TestCreatePetNameEncoding checks that a name that is not valid UTF-8,
// as raw bytes or as an unpaired surrogate escape, is refused rather than
// stored with U+FFFD in place of what the client sent, while valid
// escapes, pairs among them, keep their meaning.
func TestCreatePetNameEncoding(t *testing.T) {
	tests := []struct {
		name, jsonName string // jsonName is the name's JSON token, quotes included
		wantName       string // "" means 400 "name must be valid UTF-8"
	}{
		{"invalid bytes", "\"a\xff\xfeb\"", ""},
		{"truncated sequence", "\"caf\xc3\"", ""},
		{"overlong encoding", "\"\xc0\xaf\"", ""},
		{"encoded surrogate", "\"\xed\xa0\x80\"", ""},
		{"lone high surrogate", `"\ud800"`, ""},
		{"lone low surrogate", `"a\udfffb"`, ""},
		{"high surrogate then letter", `"\uD83Dx"`, ""},
		{"high surrogate then other escape", `"\ud83d\u0041"`, ""},
		{"two high surrogates", `"\ud83d\ud83d"`, ""},
		{"reversed pair", `"\udc08\ud83d"`, ""},
		{"high surrogate at the end", `"Rex\ud83d"`, ""},
		{"valid pair", `"\ud83d\udc08 Tom"`, "🐈 Tom"},
		{"valid pair upper case", `"\uD83D\uDC08"`, "🐈"},
		{"raw multibyte", `"Ünïcødé 猫"`, "Ünïcødé 猫"},
		{"escaped backslash before u", `"a\\ud800"`, `a\ud800`},
		{"literal replacement character", `"\ufffd"`, "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			res := e.do(t, e.req("POST", "/v1/pets", `{"name":`+tt.jsonName+`,"categoryId":1}`))
			if tt.wantName == "" {
				if res.Status != 400 {
					t.Fatalf("status = %d, want 400: %s", res.Status, res.Body)
				}
				if got := res.errorBody(t); got.Message != "name must be valid UTF-8" {
					t.Fatalf("message = %q", got.Message)
				}
				if n := len(e.store.Pets()); n != 0 {
					t.Fatalf("%d pets stored after a refused create", n)
				}
				return
			}
			var pet petstore.Pet
			if err := json.Unmarshal(res.Body, &pet); err != nil || res.Status != 201 {
				t.Fatalf("%d %s (%v)", res.Status, res.Body, err)
			}
			if pet.Name != tt.wantName {
				t.Fatalf("name = %q, want %q", pet.Name, tt.wantName)
			}
		})
	}
}

func TestGetPet(t *testing.T) {
	e := newEnv(t, nil)
	pets := e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 2, Status: petstore.StatusSold})
	tests := []struct {
		path string
		want int
	}{
		{"/v1/pets/1", 200},
		{"/v1/pets/2", 404},
		{"/v1/pets/0", 404},
		{"/v1/pets/-1", 404},
		{"/v1/pets/9223372036854775807", 404},
		{"/v1/pets/9223372036854775808", 400},
		{"/v1/pets/abc", 400},
		{"/v1/pets/1.5", 400},
		{"/v1/pets/+1", 400},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := e.do(t, e.req("GET", tt.path, ""))
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.Status, tt.want, res.Body)
			}
			for h, want := range map[string]string{
				"Deprecation": "@1767225600",
				"Sunset":      "Thu, 05 Dec 2030 00:00:00 GMT",
				"Link":        `</v1/pets>; rel="successor-version"`,
			} {
				if got := res.Header.Get(h); got != want {
					t.Fatalf("%s = %q, want %q", h, got, want)
				}
			}
			if tt.want == 200 {
				var got petstore.Pet
				if err := json.Unmarshal(res.Body, &got); err != nil || got != pets[0] {
					t.Fatalf("pet = %+v, want %+v (%v)", got, pets[0], err)
				}
			} else {
				res.errorBody(t)
			}
		})
	}
	t.Run("configured deprecation date", func(t *testing.T) {
		e := newEnv(t, func(c *httpx.Config) { c.DeprecatedAt = time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC) })
		res := e.do(t, e.req("GET", "/v1/pets/1", ""))
		if got := res.Header.Get("Deprecation"); got != "@1803859200" {
			t.Fatalf("Deprecation = %q", got)
		}
	})
}

func TestRoutingErrors(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		method, path string
		want         int
		allow        string
	}{
		{"GET", "/v1/nope", 404, ""},
		{"GET", "/v1/", 404, ""},
		{"GET", "/v1/pets/", 404, ""},
		{"GET", "/v1/pets/1/owner", 404, ""},
		{"DELETE", "/v1/pets", 405, "GET, HEAD, POST"},
		{"PUT", "/v1/pets/1", 405, "GET, HEAD"},
		{"POST", "/v1/openapi.json", 405, "GET, HEAD"},
		{"OPTIONS", "/v1/pets/1", 405, "GET, HEAD"},
		// Paths the standard mux would redirect with an HTML body are
		// JSON 404s; an escaped slash is part of the id, which is then
		// not a number (400), as the ServeMux pattern reads it.
		{"GET", "/v1", 404, ""},
		{"GET", "/v1//pets", 404, ""},
		{"GET", "/v1/./pets", 404, ""},
		{"GET", "/v1/pets/1/..", 404, ""},
		{"GET", "/v1/pets/1%2F2", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := e.do(t, e.req(tt.method, tt.path, ""))
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d", res.Status, tt.want)
			}
			if got := res.Header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
			res.errorBody(t)
		})
	}
}

// A 404 names the path as the client wrote it: an escaped slash is not a
// segment separator to the router, so "/v1/pets%2F1" is no path here, and
// a message naming "/v1/pets/1", a path that answers, would mislead.
func TestNotFoundNamesThePathAsSent(t *testing.T) {
	e := newEnv(t, nil)
	for _, path := range []string{"/v1/pets%2F1", "/v1%2Fpets", "/v1/pets%2F"} {
		t.Run(path, func(t *testing.T) {
			res := e.do(t, e.req("GET", path, ""))
			if res.Status != http.StatusNotFound {
				t.Fatalf("status = %d, want 404", res.Status)
			}
			if msg, want := res.errorBody(t).Message, "no such path: "+path; msg != want {
				t.Fatalf("message = %q, want %q", msg, want)
			}
		})
	}
}

// TestHead checks that every GET route answers HEAD as RFC 9110 asks:
// the status and headers of GET, Content-Length included, and no body.
// HEAD is not in the OpenAPI document; each GET it is compared with goes
// through the contract check.
func TestHead(t *testing.T) {
	e := newEnv(t, nil)
	e.seed(t, petstore.NewPet{Name: "Rex", CategoryID: 1, Status: petstore.StatusSold}, petstore.NewPet{Name: "Tom", CategoryID: 2})
	tests := []struct {
		name, target string
		want         int
		auth         bool
	}{
		{"openapi document", "/v1/openapi.json", 200, false},
		{"list with a next link", "/v1/pets?limit=1", 200, true},
		{"list by status", "/v1/pets?status=sold", 200, true},
		{"list, bad query", "/v1/pets?limit=0", 400, true},
		{"pet", "/v1/pets/1", 200, true},
		{"missing pet", "/v1/pets/3", 404, true},
		{"bad pet id", "/v1/pets/abc", 400, true},
		{"unknown path", "/v1/nope", 404, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := func(method string) *http.Request {
				if tt.auth {
					return e.req(method, tt.target, "")
				}
				return httptest.NewRequest(method, tt.target, nil)
			}
			get := e.do(t, build("GET"))
			head, _ := serve(e.h, build("HEAD"))
			if get.Status != tt.want || head.Status != tt.want {
				t.Fatalf("GET %d, HEAD %d, want %d", get.Status, head.Status, tt.want)
			}
			if len(head.Body) != 0 {
				t.Fatalf("HEAD sent a body: %q", head.Body)
			}
			// A recorder has no server to count a small body: HEAD, whose
			// body is dropped, announces the length GET's body has, which
			// the server counts (see "over a real connection").
			if got, want := head.Header.Get("Content-Length"), fmt.Sprint(len(get.Body)); got != want {
				t.Fatalf("HEAD Content-Length = %q, want %q, GET's body", got, want)
			}
			if got := get.Header.Get("Content-Length"); got != "" && got != fmt.Sprint(len(get.Body)) {
				t.Fatalf("GET Content-Length = %q, body has %d bytes", got, len(get.Body))
			}
			for _, h := range []http.Header{get.Header, head.Header} {
				h.Del("X-Request-Id")
				h.Del("Content-Length")
			}
			if fmt.Sprint(head.Header) != fmt.Sprint(get.Header) {
				t.Fatalf("HEAD headers\n%v\nGET headers\n%v", head.Header, get.Header)
			}
		})
	}
	t.Run("over a real connection", func(t *testing.T) {
		// Enough pets for a page larger than net/http's buffer, whose
		// length the handler sets rather than the server.
		for i := range 60 {
			e.seed(t, petstore.NewPet{Name: fmt.Sprintf("pet number %d", i), CategoryID: 1})
		}
		srv := httptest.NewServer(e.h)
		defer srv.Close()
		for _, target := range []string{"/v1/pets?limit=2", "/v1/pets/1", "/v1/pets?limit=100"} {
			var lengths []int64
			for _, method := range []string{"GET", "HEAD"} {
				r, err := http.NewRequest(method, srv.URL+target, nil)
				if err != nil {
					t.Fatal(err)
				}
				r.Header.Set("Authorization", "Bearer "+e.secret)
				res, err := srv.Client().Do(r)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				_ = res.Body.Close()
				if err != nil || res.StatusCode != 200 {
					t.Fatalf("%s %s: %d %v", method, target, res.StatusCode, err)
				}
				if len(res.TransferEncoding) != 0 {
					t.Errorf("%s %s: Transfer-Encoding %v, want a Content-Length", method, target, res.TransferEncoding)
				}
				if method == "GET" && res.ContentLength != int64(len(body)) {
					t.Errorf("GET %s: Content-Length %d, body has %d bytes", target, res.ContentLength, len(body))
				}
				lengths = append(lengths, res.ContentLength)
			}
			if lengths[0] <= 0 || lengths[1] != lengths[0] {
				t.Errorf("%s: Content-Length GET %d, HEAD %d; want the same, > 0", target, lengths[0], lengths[1])
			}
		}
	})
}

// faultyService is the real Service with one operation replaced, to see
// how the handler reports failures it cannot cause through a real store.
type faultyService struct {
	petstore.PetService
	list func() (petstore.PetPage, error)
}

func (f faultyService) ListPets(ctx context.Context, _ petstore.PetFilter) (petstore.PetPage, error) {
	return f.list()
}

func TestServiceFailures(t *testing.T) {
	tests := []struct {
		name     string
		list     func() (petstore.PetPage, error)
		want     int
		code     string
		wantLogs string
	}{
		{"panic", func() (petstore.PetPage, error) { panic("boom") }, 500, petstore.CodeInternal, "boom"},
		{"plain error", func() (petstore.PetPage, error) { return petstore.PetPage{}, errors.New("disk on fire") }, 500, petstore.CodeInternal, "disk on fire"},
		{"unavailable", func() (petstore.PetPage, error) {
			return petstore.PetPage{}, petstore.Errorf(petstore.CodeUnavailable, "database unavailable")
		}, 503, petstore.CodeUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *httpx.Config) { c.Service = faultyService{PetService: c.Service, list: tt.list} })
			res := e.do(t, e.req("GET", "/v1/pets", ""))
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d", res.Status, tt.want)
			}
			got := res.errorBody(t)
			if got.Code != tt.code {
				t.Fatalf("code = %q, want %q", got.Code, tt.code)
			}
			if tt.code == petstore.CodeInternal && got.Message != "Internal error." {
				t.Fatalf("message leaks internals: %q", got.Message)
			}
			if !strings.Contains(e.logs.String(), tt.wantLogs) {
				t.Fatalf("logs lack %q:\n%s", tt.wantLogs, e.logs)
			}
		})
	}
}

// failingGet fails GetPet with err, as a store that is down does.
type failingGet struct {
	petstore.PetService
	err error
}

func (f failingGet) GetPet(context.Context, int64) (petstore.Pet, error) {
	return petstore.Pet{}, f.err
}

// The deprecated getPet's 500 and 503 come after routing, so they carry
// its Deprecation, Sunset and Link, and the document declares them.
func TestGetPetFailuresCarryTheDeprecationHeaders(t *testing.T) {
	for _, err := range []error{errors.New("disk on fire"), petstore.Errorf(petstore.CodeUnavailable, "database unavailable")} {
		t.Run(err.Error(), func(t *testing.T) {
			e := newEnv(t, func(c *httpx.Config) { c.Service = failingGet{PetService: c.Service, err: err} })
			res := e.do(t, e.req("GET", "/v1/pets/1", ""))
			if res.Status != httpx.ErrorStatus(err) {
				t.Fatalf("status = %d, want %d", res.Status, httpx.ErrorStatus(err))
			}
			for _, h := range []string{"Deprecation", "Sunset", "Link"} {
				if res.Header.Get(h) == "" {
					t.Fatalf("%d without %s", res.Status, h)
				}
			}
		})
	}
}

// TestContextErrors checks how context errors from the service reach the
// client and the logs: a client that went away is no server error, an
// expired deadline is 503, and a Canceled error while the request is still
// alive stays an internal error worth logging.
func TestContextErrors(t *testing.T) {
	tests := []struct {
		name      string
		fail      func(cancel context.CancelFunc) error
		want      int
		code      string
		wantLevel string // level of the line logging the cause; "" means none at Info or above
	}{
		{"client disconnected", func(cancel context.CancelFunc) error {
			cancel()
			return fmt.Errorf("list pets: %w", context.Canceled)
		}, 503, petstore.CodeUnavailable, ""},
		{"deadline exceeded", func(context.CancelFunc) error {
			return fmt.Errorf("list pets: %w", context.DeadlineExceeded)
		}, 503, petstore.CodeUnavailable, "WARN"},
		{"canceled while the request is alive", func(context.CancelFunc) error {
			return context.Canceled
		}, 500, petstore.CodeInternal, "ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e := newEnv(t, func(c *httpx.Config) {
				c.Service = faultyService{PetService: c.Service, list: func() (petstore.PetPage, error) {
					return petstore.PetPage{}, tt.fail(cancel)
				}}
			})
			res := e.do(t, e.req("GET", "/v1/pets", "").WithContext(ctx))
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.Status, tt.want, res.Body)
			}
			if got := res.errorBody(t); got.Code != tt.code || strings.Contains(got.Message, "context") {
				t.Fatalf("error = %+v, want code %q and no internals", got, tt.code)
			}
			var causeLevels []string
			for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatal(err)
				}
				if entry["msg"] != "request" {
					causeLevels = append(causeLevels, fmt.Sprint(entry["level"]))
				}
			}
			want := []string{}
			if tt.wantLevel != "" {
				want = append(want, tt.wantLevel)
			}
			if fmt.Sprint(causeLevels) != fmt.Sprint(want) {
				t.Fatalf("cause logged at levels %v, want %v:\n%s", causeLevels, want, e.logs)
			}
		})
	}
}

func TestRequestIDAndLogs(t *testing.T) {
	e := newEnv(t, nil)
	uuidV7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tests := []struct {
		name, sent string
		keep       bool
	}{
		{"none", "", false},
		{"sane", "trace-42.A_b", true},
		{"longest sane", strings.Repeat("a", 128), true},
		{"too long", strings.Repeat("a", 129), false},
		{"bad characters", "abc def", false},
		{"log injection", "x\nlevel=ERROR", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.req("POST", "/v1/pets", `{"name":"Secret Rex","categoryId":1}`)
			if tt.sent != "" {
				r.Header["X-Request-Id"] = []string{tt.sent}
			}
			res := e.do(t, r)
			got := res.Header.Get("X-Request-Id")
			if tt.keep && got != tt.sent || !tt.keep && !uuidV7.MatchString(got) {
				t.Fatalf("X-Request-Id = %q (sent %q)", got, tt.sent)
			}
			var line map[string]any
			logs := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
			if err := json.Unmarshal([]byte(logs[len(logs)-1]), &line); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]any{"method": "POST", "route": "POST /v1/pets", "status": float64(201), "request_id": got, "key_id": e.key.ID} {
				if line[k] != want {
					t.Fatalf("log %s = %v, want %v in %v", k, line[k], want, line)
				}
			}
			if _, ok := line["duration"]; !ok {
				t.Fatal("log lacks duration")
			}
		})
	}
	if logs := e.logs.String(); strings.Contains(logs, e.secret) || strings.Contains(logs, "Secret Rex") {
		t.Fatalf("logs contain the key or the body:\n%s", logs)
	}
}

// fakeLimiter counts requests per subject in fixed windows that start at
// a fixed time, like the real limiter but without any store.
type fakeLimiter struct {
	mu       sync.Mutex
	now      time.Time
	counts   map[string]int64
	subjects []string
	banned   bool
	degraded bool
	err      error
}

func (f *fakeLimiter) Decide(_ context.Context, subject string, l petstore.Limits) (ratelimit.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subjects = append(f.subjects, subject)
	if f.err != nil {
		return ratelimit.Decision{}, f.err
	}
	minute := ratelimit.Window{Name: "minute", Quota: l.PerMinute, Length: time.Minute, Reset: f.now.Add(time.Minute)}
	day := ratelimit.Window{Name: "day", Quota: l.PerDay, Length: 24 * time.Hour, Reset: f.now.Add(24 * time.Hour)}
	if f.degraded {
		minute.Remaining, day.Remaining = l.PerMinute-1, l.PerDay-1
		return ratelimit.Decision{Allowed: true, Degraded: true, Binding: minute, Windows: []ratelimit.Window{minute, day}}, nil
	}
	if f.banned {
		ban := ratelimit.Window{Name: "minute", Quota: l.PerMinute, Length: time.Minute, Reset: f.now.Add(15 * time.Minute)}
		return ratelimit.Decision{Code: petstore.CodeAPIKeyBanned, Binding: ban, Windows: []ratelimit.Window{minute, day}, RetryAfter: 15 * time.Minute}, nil
	}
	n := f.counts[subject]
	if n >= l.PerMinute {
		return ratelimit.Decision{Code: petstore.CodeRateLimited, Binding: minute, Windows: []ratelimit.Window{minute, day}, RetryAfter: 59*time.Second + time.Millisecond}, nil
	}
	f.counts[subject] = n + 1
	minute.Remaining, day.Remaining = l.PerMinute-n-1, l.PerDay-n-1
	return ratelimit.Decision{Allowed: true, Binding: minute, Windows: []ratelimit.Window{minute, day}}, nil
}

func TestRateLimitHook(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	reset := fmt.Sprint(now.Add(time.Minute).Unix())
	free := map[string]string{
		"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59", "X-RateLimit-Reset": reset,
		"RateLimit-Policy": `"minute";q=60;w=60, "day";q=1000;w=86400`,
		"RateLimit":        `"minute";r=59;t=60, "day";r=999;t=86400`,
	}
	tests := []struct {
		name    string
		setup   func(*fakeLimiter, *env) *http.Request
		want    int
		code    string
		headers map[string]string // "" means absent
		subject string            // "key" means the env's key
	}{
		{"allowed", func(f *fakeLimiter, e *env) *http.Request { return e.req("GET", "/v1/pets", "") }, 200, "", free, "key"},
		{"created", func(f *fakeLimiter, e *env) *http.Request {
			return e.req("POST", "/v1/pets", `{"name":"Rex","categoryId":1}`)
		}, 201, "", free, "key"},
		{"bad request counts", func(f *fakeLimiter, e *env) *http.Request { return e.req("GET", "/v1/pets?limit=0", "") }, 400, petstore.CodeInvalidRequest, free, "key"},
		{"not found counts", func(f *fakeLimiter, e *env) *http.Request { return e.req("GET", "/v1/pets/7", "") }, 404, petstore.CodeNotFound, free, "key"},
		{"no key limited by address", func(f *fakeLimiter, e *env) *http.Request {
			return httptest.NewRequest("GET", "/v1/pets", nil)
		}, 401, petstore.CodeUnauthorized, free, "ip:192.0.2.1"},
		{"openapi limited by address, on its own budget", func(f *fakeLimiter, e *env) *http.Request {
			r := e.req("GET", "/v1/openapi.json", "")
			return r
		}, 200, "", map[string]string{"X-RateLimit-Limit": "600", "RateLimit-Policy": `"minute";q=600;w=60, "day";q=20000;w=86400`}, "pub:192.0.2.1"},
		{"over the limit", func(f *fakeLimiter, e *env) *http.Request {
			f.counts["key:"+e.key.ID] = 60
			return e.req("GET", "/v1/pets", "")
		}, 429, petstore.CodeRateLimited, map[string]string{"Retry-After": "60", "X-RateLimit-Remaining": "0", "RateLimit": `"minute";r=0;t=60, "day";r=0;t=86400`}, "key"},
		{"no key over the limit", func(f *fakeLimiter, e *env) *http.Request {
			f.counts["ip:192.0.2.1"] = 60
			return httptest.NewRequest("GET", "/v1/pets", nil)
		}, 429, petstore.CodeRateLimited, map[string]string{"Retry-After": "60"}, "ip:192.0.2.1"},
		{"banned", func(f *fakeLimiter, e *env) *http.Request {
			f.banned = true
			return e.req("GET", "/v1/pets", "")
		}, 429, petstore.CodeAPIKeyBanned, map[string]string{"Retry-After": "900", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(now.Add(15 * time.Minute).Unix())}, "key"},
		{"degraded sends its estimate", func(f *fakeLimiter, e *env) *http.Request {
			f.degraded = true
			return e.req("GET", "/v1/pets", "")
		}, 200, "", map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59", "RateLimit": `"minute";r=59;t=60, "day";r=999;t=86400`}, "key"},
		{"limiter failure", func(f *fakeLimiter, e *env) *http.Request {
			f.err = errors.New("redis: connection refused")
			return e.req("GET", "/v1/pets", "")
		}, 503, petstore.CodeUnavailable, map[string]string{"X-RateLimit-Limit": ""}, "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLimiter{now: now, counts: map[string]int64{}}
			e := newEnv(t, func(c *httpx.Config) {
				c.Limiter, c.IETFRateLimitHeaders = f, true
				c.Now = func() time.Time { return now }
			})
			res := e.do(t, tt.setup(f, e))
			if res.Status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.Status, tt.want, res.Body)
			}
			if tt.code != "" {
				if got := res.errorBody(t); got.Code != tt.code {
					t.Fatalf("code = %q, want %q", got.Code, tt.code)
				}
			}
			for h, want := range tt.headers {
				if got := res.Header.Get(h); got != want {
					t.Fatalf("%s = %q, want %q", h, got, want)
				}
			}
			subject := tt.subject
			if subject == "key" {
				subject = "key:" + e.key.ID
			}
			if len(f.subjects) != 1 || f.subjects[0] != subject {
				t.Fatalf("limiter asked about %q, want [%s]", f.subjects, subject)
			}
			if strings.Contains(e.logs.String(), "connection refused") != (f.err != nil) {
				t.Fatalf("limiter failure logged wrongly:\n%s", e.logs)
			}
		})
	}
}

func TestClientAddress(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"peer", "203.0.113.5:4000", nil, "ip:203.0.113.5"},
		{"untrusted peer's header ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, "ip:203.0.113.5"},
		{"trusted proxy", "10.1.2.3:4000", []string{"198.51.100.1"}, "ip:198.51.100.1"},
		{"right-most untrusted hop", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1, 10.9.9.9"}, "ip:198.51.100.1"},
		{"several header lines", "10.1.2.3:4000", []string{"6.6.6.6", "198.51.100.1"}, "ip:198.51.100.1"},
		{"ipv6 proxy, counted per /64", "[::1]:4000", []string{"2001:db8::7"}, "ip:2001:db8::/64"},
		{"garbage stops at the proxy", "10.1.2.3:4000", []string{"198.51.100.1, nonsense"}, "ip:10.1.2.3"},
		{"only proxies", "10.1.2.3:4000", []string{"10.4.4.4"}, "ip:10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLimiter{counts: map[string]int64{}}
			e := newEnv(t, func(c *httpx.Config) { c.Limiter = f; c.TrustedProxies = proxies })
			r := httptest.NewRequest("GET", "/v1/pets", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			e.do(t, r)
			if len(f.subjects) != 1 || f.subjects[0] != tt.want {
				t.Fatalf("subject = %q, want %q", f.subjects, tt.want)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	store := memstore.New()
	tests := []struct {
		name string
		cfg  httpx.Config
	}{
		{"no service", httpx.Config{Auth: petstore.NewKeys(store)}},
		{"no auth", httpx.Config{Service: petstore.NewService(store)}},
		{"relative base", httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), BasePath: "v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := httpx.New(tt.cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}
