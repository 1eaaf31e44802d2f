// Package apitest holds what the tests of the HTTP API packages share:
// httpx (/v1), httpx/dashboard and httpx/edge. Its contract check
// validates every request/response pair a test produces against the
// OpenAPI document the handler itself serves, so that document and server
// cannot drift; its World is a whole platform (dashboard, /v1 and the edge
// over one store and a test DNS server) for the dashboard's and the edge's
// tests.
package apitest

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
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

var documentRouters sync.Map // document path -> routers.Router

// DocumentRouter returns a router over the OpenAPI document that the
// handler from newHandler serves at path, loading and validating it once
// per path.
func DocumentRouter(t testing.TB, path string, newHandler func() http.Handler) routers.Router {
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

// Response is a recorded response with its body read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrorBody decodes an Error body, failing the test when it is not one
// that agrees with the status.
func (r Response) ErrorBody(t testing.TB) petstore.Error {
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

// Domain decodes a Domain body.
func (r Response) Domain(t testing.TB) customdomain.Domain {
	t.Helper()
	var d customdomain.Domain
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatalf("body is not a Domain: %q (%v)", r.Body, err)
	}
	return d
}

// AuthedReq builds a request authenticated with the key secret, with a
// JSON body; body "" means none.
func AuthedReq(secret, method, target, body string) *http.Request {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Authorization", "Bearer "+secret)
	return r
}

// Serve serves req on h and records the response; it also returns the
// request's body, which serving consumed.
func Serve(h http.Handler, req *http.Request) (Response, []byte) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return Response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}, reqBody
}

// CheckContract checks a served pair against router's document. A 2xx
// response requires a request the document accepts; every response must
// match the document, status, headers and body included, and carry no
// header the document does not declare for its status. Requests that
// match no operation must answer one of the statuses offDocument (404 and
// 405 on unknown paths or methods, ...) with an Error body.
func CheckContract(t testing.TB, router routers.Router, req *http.Request, reqBody []byte, res Response, offDocument ...int) {
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
		res.ErrorBody(t)
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
	if u := UndeclaredHeaders(t, router, creq, res); len(u) > 0 {
		t.Fatalf("contract: %s %s -> %d carries %v, which the document does not declare", req.Method, req.URL, res.Status, u)
	}
}

// UndeclaredHeaders returns the header fields of res that the operation
// of req in router's document does not declare for res's status, apart
// from those every HTTP answer may carry (Content-Type, Content-Length,
// Date, X-Content-Type-Options). A client generated from the document
// reads only what it declares.
func UndeclaredHeaders(t testing.TB, router routers.Router, req *http.Request, res Response) []string {
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

// DashboardDo serves req on the dashboard h and checks the pair against
// the dashboard's OpenAPI document (see CheckContract), and that it says
// the API is in beta. Requests outside the document may meet
// authentication first.
func DashboardDo(t testing.TB, h http.Handler, req *http.Request) Response {
	t.Helper()
	res, reqBody := Serve(h, req)
	if got := res.Header.Get(httpx.StabilityHeader); got != "beta" {
		t.Fatalf("%s %s: X-API-Stability = %q, want beta", req.Method, req.URL, got)
	}
	router := DocumentRouter(t, "/dashboard/api/openapi.json", func() http.Handler { return h })
	CheckContract(t, router, req, reqBody, res, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized)
	return res
}
