package httpx_test

import (
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/routers"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
)

// The contract test: every request/response pair the HTTP tests produce
// goes through do, which validates it against the OpenAPI document the
// handler itself serves (apitest.CheckContract, which the dashboard's
// tests share). Document and server therefore cannot drift.

// contractRouter loads the document served at base+"/openapi.json". It
// asks a handler of its own, without a limiter, so that loading the
// document never shows up in a test's rate-limit counts or limiter calls,
// whichever test happens to load it first. Every handler with the same base
// serves the same bytes (httpx renders the document once per base).
func contractRouter(t testing.TB, base string) routers.Router {
	t.Helper()
	return apitest.DocumentRouter(t, base+"/openapi.json", func() http.Handler {
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

// response is a recorded response with its body read; its methods
// decode the bodies of /v1.
type response apitest.Response

// errorBody decodes an Error body, failing the test when it is not one
// that agrees with the status.
func (r response) errorBody(t testing.TB) petstore.Error {
	t.Helper()
	return apitest.Response(r).ErrorBody(t)
}

// serve serves req on h and records the response; it also returns the
// request's body, which serving consumed.
func serve(h http.Handler, req *http.Request) (response, []byte) {
	res, reqBody := apitest.Serve(h, req)
	return response(res), reqBody
}

// do serves req on h and checks the pair against the document of base.
// Requests outside the document may also meet authentication and the
// rate limit first.
func do(t testing.TB, h http.Handler, base string, req *http.Request) response {
	t.Helper()
	res, reqBody := serve(h, req)
	apitest.CheckContract(t, contractRouter(t, base), req, reqBody, apitest.Response(res),
		http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized, http.StatusTooManyRequests)
	return res
}

// undeclaredHeaders returns the header fields of res that the operation
// of req in router's document does not declare for res's status (see
// apitest.UndeclaredHeaders).
func undeclaredHeaders(t testing.TB, router routers.Router, req *http.Request, res response) []string {
	t.Helper()
	return apitest.UndeclaredHeaders(t, router, req, apitest.Response(res))
}
