package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

// The contract test: every request/response pair the HTTP tests produce
// goes through do, which validates it against the OpenAPI document the
// handler itself serves. Document and server therefore cannot drift.

var documentRouters sync.Map // document path -> routers.Router

// documentRouter returns a router over the OpenAPI document that the
// handler from newHandler serves at path, loading and validating it once
// per path.
func documentRouter(t testing.TB, path string, newHandler func() http.Handler) routers.Router {
	t.Helper()
	if r, ok := documentRouters.Load(path); ok {
		return r.(routers.Router)
	}
	rec := httptest.NewRecorder()
	newHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load served OpenAPI document %s: %v", path, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("served OpenAPI document %s is invalid: %v", path, err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	documentRouters.Store(path, r)
	return r
}

// contractRouter loads the document served at base+"/openapi.json". It
// asks a handler of its own, without a limiter, so that loading the
// document never shows up in a test's rate-limit counts or limiter calls,
// whichever test happens to load it first. Every handler with the same base
// serves the same bytes (httpx renders the document once per base).
func contractRouter(t testing.TB, base string) routers.Router {
	t.Helper()
	return documentRouter(t, base+"/openapi.json", func() http.Handler {
		store := memstore.New()
		// With Orders and Idempotency, so the document has every
		// operation and parameter.
		h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), BasePath: base,
			Orders: petstore.NewOrderService(store), Idempotency: store})
		if err != nil {
			t.Fatal(err)
		}
		return h
	})
}

// response is a recorded response with its body read.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// errorBody decodes an Error body, failing the test when it is not one
// that agrees with the status.
func (r response) errorBody(t testing.TB) petstore.Error {
	t.Helper()
	var e petstore.Error
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("body is not an Error: %q (%v)", r.Body, err)
	}
	if e.Status != r.Status || httpx.StatusOf(e.Code) != r.Status {
		t.Fatalf("Error %+v does not match status %d", e, r.Status)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	return e
}

// domain decodes a Domain body.
func (r response) domain(t testing.TB) customdomain.Domain {
	t.Helper()
	var d customdomain.Domain
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatalf("body is not a Domain: %q (%v)", r.Body, err)
	}
	return d
}

// serve serves req on h and records the response; it also returns the
// request's body, which serving consumed.
func serve(h http.Handler, req *http.Request) (response, []byte) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}, reqBody
}

// do serves req on h and checks the pair against the document of base.
// Requests outside the document may also meet authentication and the
// rate limit first.
func do(t testing.TB, h http.Handler, base string, req *http.Request) response {
	t.Helper()
	res, reqBody := serve(h, req)
	checkContract(t, contractRouter(t, base), req, reqBody, res,
		http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized, http.StatusTooManyRequests)
	return res
}

// checkContract checks a served pair against router's document. A 2xx
// response requires a request the document accepts; every response must
// match the document, status, headers and body included, and carry no
// header the document does not declare for its status. Requests that
// match no operation must answer one of the statuses offDocument (404 and
// 405 on unknown paths or methods, ...) with an Error body.
func checkContract(t testing.TB, router routers.Router, req *http.Request, reqBody []byte, res response, offDocument ...int) {
	t.Helper()
	creq := req.Clone(context.Background())
	creq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(creq)
	if err == nil && strings.HasSuffix(creq.URL.Path, "/") {
		// kin-openapi's router forgives a trailing slash; the documents
		// (and the servers) do not.
		err = &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
	}
	if err != nil {
		var re *routers.RouteError
		if !errors.As(err, &re) {
			t.Fatalf("contract: find route: %v", err)
		}
		if !slices.Contains(offDocument, res.Status) {
			t.Fatalf("contract: %s %s is not in the document but answered %d", req.Method, req.URL, res.Status)
		}
		res.errorBody(t)
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: creq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && res.Status/100 == 2 {
		t.Fatalf("contract: %s %s answered %d but the document rejects the request: %v", req.Method, req.URL, res.Status, err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(res.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Fatalf("contract: %s %s -> %d %s: %v", req.Method, req.URL, res.Status, res.Body, err)
	}
	if u := undeclaredHeaders(t, router, creq, res); len(u) > 0 {
		t.Fatalf("contract: %s %s -> %d carries %v, which the document does not declare", req.Method, req.URL, res.Status, u)
	}
}

// undeclaredHeaders returns the header fields of res that the operation
// of req in router's document does not declare for res's status, apart
// from those every HTTP answer may carry (Content-Type, Content-Length,
// Date, X-Content-Type-Options). A client generated from the document
// reads only what it declares.
func undeclaredHeaders(t testing.TB, router routers.Router, req *http.Request, res response) []string {
	t.Helper()
	route, _, err := router.FindRoute(req.Clone(context.Background()))
	if err != nil {
		t.Fatalf("%s %s is not in the document: %v", req.Method, req.URL, err)
	}
	r := route.Operation.Responses.Status(res.Status)
	if r == nil || r.Value == nil {
		return []string{fmt.Sprintf("(status %d)", res.Status)}
	}
	var out []string
	for name := range res.Header {
		switch name {
		case "Content-Type", "Content-Length", "Date", "X-Content-Type-Options":
			continue
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(r.Value.Headers)), func(h string) bool { return strings.EqualFold(h, name) }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
