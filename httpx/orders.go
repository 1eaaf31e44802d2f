package httpx

import (
	"io"
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// The store orders operations (beta), served when Config.Orders is set.
// Their checks and answers follow the pets operations: the chain
// authenticates and limits, match routes (404, 405 with Allow), ServeHTTP
// checks the media type and size, and the handlers decode and answer.
// Every routed answer carries X-API-Stability: beta, errors included.

// ordersPath is where the orders live under the base.
const ordersPath = "/store/orders"

// StabilityHeader and StabilityBeta mark the answers of beta operations
// (store orders, the dashboard API), as their OpenAPI documents do with
// x-stability.
const (
	StabilityHeader = "X-API-Stability"
	StabilityBeta   = "beta"
)

// orderRoutes are the orders operations of one handler.
type orderRoutes struct {
	svc  petstore.OrderService
	base string
	path string // base + ordersPath

	// create answers POST /store/orders for a decoded body, wrapped in
	// Idempotency-Key replay when Config.Idempotency is set, as createPet
	// is.
	create decodedHandler[petstore.NewOrder]
}

func newOrderRoutes(cfg Config, base string) *orderRoutes {
	o := &orderRoutes{svc: cfg.Orders, base: base, path: base + ordersPath}
	o.create = createOrder{o}
	if cfg.Idempotency != nil {
		o.create = newIdempotent(cfg.Idempotency, cfg.Now, o.create)
	}
	return o
}

// project returns the project of the request's key. The chain always
// authenticates orders requests, so a missing key is a wiring error,
// answered as unauthorized rather than served for no project.
func project(r *http.Request) (string, error) {
	key, ok := KeyFromContext(r.Context())
	if !ok || key.ProjectID == "" {
		return "", petstore.UnauthorizedError()
	}
	return key.ProjectID, nil
}

// handleList answers GET /store/orders: one page, and a Link to the next.
func (o *orderRoutes) handleList(w http.ResponseWriter, r *http.Request) {
	projectID, err := project(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	f, err := parseOrderListQuery(r.URL.RawQuery)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	page, err := o.svc.ListOrders(r.Context(), projectID, f)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if link := nextLink(o.path, page.NextCursor, f.Limit, string(f.Status)); link != "" {
		w.Header().Set("Link", link)
	}
	WriteJSON(w, http.StatusOK, page.Orders)
}

// handleCreate answers POST /store/orders. Like handleCreatePet it only
// decodes, creates and responds, so the Idempotency-Key wrapper can
// replay its stored response.
func (o *orderRoutes) handleCreate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, r, petstore.Errorf(petstore.CodeInvalidRequest, "could not read the body"))
		return
	}
	no, err := strictjson.NewOrder(body)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	// Defaults applied before the Idempotency-Key hash: sending a default
	// is the same request as leaving it out.
	no.Normalize()
	o.create.serve(w, r, no)
}

// createOrder is the operation: create, respond.
type createOrder struct{ o *orderRoutes }

func (c createOrder) serve(w http.ResponseWriter, r *http.Request, no petstore.NewOrder) {
	projectID, err := project(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	order, err := c.o.svc.CreateOrder(r.Context(), projectID, no)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	w.Header().Set("Location", c.o.base+ordersPath+"/"+itoa(order.ID))
	WriteJSON(w, http.StatusCreated, order)
}

// handleGet answers GET /store/orders/{orderId}.
func (o *orderRoutes) handleGet(w http.ResponseWriter, r *http.Request) {
	projectID, err := project(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	id, err := parseOrderID(r.PathValue("orderId"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	order, err := o.svc.GetOrder(r.Context(), projectID, id)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, order)
}
