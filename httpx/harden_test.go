package httpx_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/apitest"
)

// TestIdempotencyHashIsWhatIsCreated: the Idempotency-Key hash is of the
// NewPet the operation creates, so a retry replays exactly when it would
// create the same pet, and a body whose member names repeat ignoring case
// is refused before any key is claimed.
func TestIdempotencyHashIsWhatIsCreated(t *testing.T) {
	t.Parallel()
	t.Run("names repeated ignoring case are 400 and claim nothing", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		for _, body := range []string{
			`{"name":"Alpha","categoryId":1,"NAME":"Bravo"}`,
			`{"NAME":"Bravo","name":"Alpha","categoryId":1}`,
			`{"name":"Alpha","name":"Bravo","categoryId":1}`,
			`{"name":"Alpha","categoryId":1,"Categoryid":2}`,
			`{"name":"Alpha","categoryId":1,"x":1,"X":2}`,
		} {
			got := e.post(t, "k-1", body)
			if got.Status != 400 || got.errorBody(t).Code != petstore.CodeInvalidRequest || !strings.Contains(got.errorBody(t).Message, "unique") {
				t.Fatalf("%s: %d %s, want 400 about unique names", body, got.Status, got.Body)
			}
		}
		// A field's name in another case alone is what case-insensitive
		// readers take for the field: refused, not ignored.
		for _, body := range []string{`{"NAME":"Bravo","categoryId":1}`, `{"name":"Alpha","categoryId":1,"stAtus":"sold"}`, `{"name":"Alpha","categoryid":1}`, `{"name":"Alpha","CATEGORYID":1}`} {
			got := e.post(t, "k-1", body)
			if got.Status != 400 || !strings.Contains(got.errorBody(t).Message, "case-sensitive") {
				t.Fatalf("%s: %d %s, want 400 about case", body, got.Status, got.Body)
			}
		}
		if n := e.petCount(t); n != 0 {
			t.Fatalf("%d pets created", n)
		}
		// A member encoding/json does not match to a field (the dotless ı
		// is no i to it) is an unknown field: ignored, not refused.
		for i, body := range []string{`{"name":"Alpha","categoryId":1,"categoryıd":7}`, `{"name":"Alpha","categoryId":1,"id":1,"ıd":2}`} {
			if got := e.post(t, fmt.Sprintf("dotless-%d", i), body); got.Status != 201 {
				t.Fatalf("%s: %d %s, want 201 (the member is unknown)", body, got.Status, got.Body)
			}
		}
		// The key was never claimed: a real request under it runs.
		if got := e.post(t, "k-1", `{"name":"Bravo","categoryId":1}`); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first real request: %d replayed %q: %s", got.Status, got.Header.Get("Idempotent-Replayed"), got.Body)
		}
	})
	t.Run("a different pet under the key is 422, the same pet replays", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		if got := e.post(t, "k-1", `{"name":"Alpha","categoryId":1}`); got.Status != 201 {
			t.Fatalf("first: %d %s", got.Status, got.Body)
		}
		if got := e.post(t, "k-1", `{"name":"Bravo","categoryId":1}`); got.Status != 422 {
			t.Fatalf("other pet: %d %s, want 422", got.Status, got.Body)
		}
		if got := e.post(t, "k-1", `{"categoryId":1, "name":"Alpha"}`); got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("true retry: %d replayed %q, want the stored 201", got.Status, got.Header.Get("Idempotent-Replayed"))
		}
	})
	t.Run("unknown fields reordered or re-spaced replay", func(t *testing.T) {
		t.Parallel()
		e := newIdemEnv(t)
		first := e.post(t, "k-1", `{"name":"Rex","categoryId":1,"id":9,"note":{"a":[1,2]}}`)
		if first.Status != 201 {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		for _, body := range []string{
			"{\n  \"note\": {\"a\": [1, 2]},\n  \"id\": 9,\n  \"categoryId\": 1,\n  \"name\": \"Rex\"\n}",
			`{"id":10,"name":"Rex","categoryId":1}`,
			`{"name":"Rex","categoryId":1}`,
		} {
			got := e.post(t, "k-1", body)
			if got.Status != 201 || got.Header.Get("Idempotent-Replayed") != "true" || string(got.Body) != string(first.Body) {
				t.Fatalf("%s: %d replayed %q %s, want the stored 201", body, got.Status, got.Header.Get("Idempotent-Replayed"), got.Body)
			}
		}
		if n := e.petCount(t); n != 1 {
			t.Fatalf("%d pets, want 1", n)
		}
	})
}

// TestRequestHeadersHardening: ambiguous or unsupported request headers
// are refused rather than read one way.
func TestRequestHeadersHardening(t *testing.T) {
	e := newEnv(t, nil)
	const body = `{"name":"Rex","categoryId":1}`
	t.Run("two Authorization headers", func(t *testing.T) {
		for _, second := range []string{"Bearer " + e.secret, "Bearer psk_other", "Basic dXNlcjpwYXNz"} {
			r := e.req("GET", "/v1/pets", "")
			r.Header.Add("Authorization", second)
			res := e.do(t, r)
			if res.Status != 401 || res.errorBody(t).Code != petstore.CodeUnauthorized || !strings.Contains(res.errorBody(t).Message, "one Authorization") {
				t.Fatalf("second %q: %d %s, want 401", second, res.Status, res.Body)
			}
			if got, want := res.Header.Get("WWW-Authenticate"), `Bearer realm="petstore", error="invalid_request"`; got != want {
				t.Fatalf("second %q: WWW-Authenticate %q, want %q (RFC 6750: more than one token)", second, got, want)
			}
		}
	})
	t.Run("Content-Encoding other than identity is 415", func(t *testing.T) {
		for _, ce := range [][]string{{"gzip"}, {"br"}, {"identity, br"}, {"identity", "deflate"}, {"x-unknown"}} {
			r := e.req("POST", "/v1/pets", body)
			r.Header["Content-Encoding"] = ce
			res := e.do(t, r)
			if res.Status != 415 || res.errorBody(t).Code != petstore.CodeUnsupportedMediaType {
				t.Fatalf("Content-Encoding %q: %d %s, want 415", ce, res.Status, res.Body)
			}
		}
		if n := len(e.store.Pets()); n != 0 {
			t.Fatalf("%d pets created from encoded bodies", n)
		}
		for _, ce := range []string{"identity", "Identity", ""} {
			r := e.req("POST", "/v1/pets", body)
			r.Header.Set("Content-Encoding", ce)
			if res := e.do(t, r); res.Status != 201 {
				t.Fatalf("Content-Encoding %q: %d %s, want 201", ce, res.Status, res.Body)
			}
		}
	})
	t.Run("two Content-Type headers are 415", func(t *testing.T) {
		// Content-Type is a singleton field (RFC 9110 §8.3): which of two
		// a proxy or the server reads is not defined, so neither is.
		for _, second := range []string{"text/plain", "application/json"} {
			r := e.req("POST", "/v1/pets", body)
			r.Header.Add("Content-Type", second)
			res := e.do(t, r)
			if res.Status != 415 || res.errorBody(t).Code != petstore.CodeUnsupportedMediaType {
				t.Fatalf("second Content-Type %q: %d %s, want 415", second, res.Status, res.Body)
			}
		}
	})
	t.Run("invalid UTF-8 anywhere in the body is 400", func(t *testing.T) {
		for _, b := range []string{
			"{\"name\":\"Rex\",\"categoryId\":1,\"note\":\"a\xffb\"}",
			"{\"name\":\"Rex\",\"categoryId\":1,\"note\":[\"\xc3\"]}",
			"{\"name\":\"Rex\",\"categoryId\":1,\"n\xffte\":1}",
			`{"name":"Rex","categoryId":1,"note":"\ud800"}`,
			`{"name":"Rex","categoryId":1,"note":{"deep":"\udfff"}}`,
		} {
			res := e.do(t, e.req("POST", "/v1/pets", b))
			if res.Status != 400 || !strings.Contains(res.errorBody(t).Message, "UTF-8") {
				t.Fatalf("%q: %d %s, want 400 about UTF-8", b, res.Status, res.Body)
			}
		}
	})
}

// TestJSONIsNotHTMLEscaped: JSON answers are JSON, not HTML: <, > and &
// come back as sent, not as \u003c escapes.
func TestJSONIsNotHTMLEscaped(t *testing.T) {
	e := newEnv(t, nil)
	res := e.do(t, e.req("POST", "/v1/pets", `{"name":"a>b & <c>","categoryId":1}`))
	if res.Status != 201 || !strings.Contains(string(res.Body), `"name":"a>b & <c>"`) {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	list := e.do(t, e.req("GET", "/v1/pets", ""))
	if !strings.Contains(string(list.Body), `"a>b & <c>"`) || strings.Contains(string(list.Body), `\u003`) {
		t.Fatalf("list: %s", list.Body)
	}
	doc := e.do(t, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if strings.Contains(string(doc.Body), `\u003c`) || strings.Contains(string(doc.Body), `\u0026`) {
		t.Fatal("the OpenAPI document is HTML-escaped")
	}

	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), newClock().Now)
	bad := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", `{"name":"<b>&.example.com"}`)
	if bad.Status != 400 || !strings.Contains(string(bad.Body), "<b>&") {
		t.Fatalf("dashboard: %d %s", bad.Status, bad.Body)
	}
	dashDoc := w.Call(t, "", http.MethodGet, apitest.DashAPI+"/openapi.json", nil)
	if strings.Contains(string(dashDoc.Body), `\u003c`) || strings.Contains(string(dashDoc.Body), `\u0026`) {
		t.Fatal("the dashboard OpenAPI document is HTML-escaped")
	}
}
