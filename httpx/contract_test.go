package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
)

// The contract test: every request/response pair the HTTP tests produce
// goes through do, which validates it against the OpenAPI document the
// handler itself serves. Document and server therefore cannot drift.

var routersByBase sync.Map // base path -> routers.Router

// contractRouter loads the document served at base+"/openapi.json". It
// asks a handler of its own, without a limiter, so that loading the
// document never shows up in a test's rate-limit counts or limiter calls,
// whichever test happens to load it first. Every handler with the same base
// serves the same bytes (httpx renders the document once per base).
func contractRouter(t testing.TB, base string) routers.Router {
	t.Helper()
	if r, ok := routersByBase.Load(base); ok {
		return r.(routers.Router)
	}
	store := memstore.New()
	h, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: petstore.NewKeys(store), BasePath: base})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, base+"/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s/openapi.json: %d %s", base, rec.Code, rec.Body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load served OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("served OpenAPI document is invalid: %v", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	routersByBase.Store(base, r)
	return r
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
	if e.Status != r.Status || petstore.StatusOf(e.Code) != r.Status {
		t.Fatalf("Error %+v does not match status %d", e, r.Status)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	return e
}

// do serves req on h and checks the pair against the document of base.
// A 2xx response requires a request the document accepts; every response
// must match the document, status, headers and body included. Requests
// that match no operation (404 and 405 on unknown paths or methods) must
// still answer an Error body.
func do(t testing.TB, h http.Handler, base string, req *http.Request) response {
	t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}

	router := contractRouter(t, base)
	creq := req.Clone(context.Background())
	creq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(creq)
	if err == nil && strings.HasSuffix(creq.URL.Path, "/") {
		// kin-openapi's router forgives a trailing slash; the document
		// (and the server) do not.
		err = &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
	}
	if err != nil {
		var re *routers.RouteError
		if !errors.As(err, &re) {
			t.Fatalf("contract: find route: %v", err)
		}
		if res.Status != http.StatusNotFound && res.Status != http.StatusMethodNotAllowed && res.Status != http.StatusUnauthorized && res.Status != http.StatusTooManyRequests {
			t.Fatalf("contract: %s %s is not in the document but answered %d", req.Method, req.URL, res.Status)
		}
		res.errorBody(t)
		return res
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
	return res
}
