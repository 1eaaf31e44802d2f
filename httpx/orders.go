package httpx

import (
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

// The store orders operations (beta), served when Config.Orders is set,
// with the checks and answers of the pets operations; every answer on
// their paths carries X-API-Stability: beta (betaUnder).

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
	path string // base + ordersPath

	// creator creates a decoded order, wrapped in Idempotency-Key replay
	// when Config.Idempotency is set, as the pets' creator is.
	creator decodedHandler[petstore.NewOrder]
}

func newOrderRoutes(cfg Config, base string) *orderRoutes {
	o := &orderRoutes{svc: cfg.Orders, path: base + ordersPath}
	o.creator = createOrder{o}
	if cfg.Idempotency != nil {
		o.creator = newIdempotent(cfg.Idempotency, cfg.Now, o.creator)
	}
	return o
}

// project returns the project of the request's key; none (a wiring
// error) is unauthorized rather than served for no project.
func project(r *http.Request) (string, error) {
	key, ok := KeyFromContext(r.Context())
	if !ok || key.ProjectID == "" {
		return "", petstore.UnauthorizedError()
	}
	return key.ProjectID, nil
}

// list answers GET /store/orders: one page, and a Link to the next.
func (o *orderRoutes) list(w http.ResponseWriter, r *http.Request) error {
	projectID, err := project(r)
	if err != nil {
		return err
	}
	f, err := parseOrderListQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, err := o.svc.ListOrders(r.Context(), projectID, f)
	if err != nil {
		return err
	}
	if link := nextLink(o.path, page.NextCursor, f.Limit, string(f.Status)); link != "" {
		w.Header().Set("Link", link)
	}
	WriteJSON(w, http.StatusOK, page.Orders)
	return nil
}

// create answers POST /store/orders; defaults are applied before the
// Idempotency-Key hash: sending a default is the same as leaving it out.
func (o *orderRoutes) create(w http.ResponseWriter, r *http.Request, body []byte) error {
	no, err := strictjson.NewOrder(body)
	if err != nil {
		return err
	}
	no.Normalize()
	o.creator.serve(w, r, no)
	return nil
}

// createOrder is the operation: create, respond.
type createOrder struct{ o *orderRoutes }

func (c createOrder) serve(w http.ResponseWriter, r *http.Request, no petstore.NewOrder) {
	projectID, err := project(r)
	if err == nil {
		var order petstore.Order
		if order, err = c.o.svc.CreateOrder(r.Context(), projectID, no); err == nil {
			w.Header().Set("Location", c.o.path+"/"+itoa(order.ID))
			WriteJSON(w, http.StatusCreated, order)
			return
		}
	}
	WriteError(w, r, err)
}

// get answers GET /store/orders/{orderId}.
func (o *orderRoutes) get(w http.ResponseWriter, r *http.Request) error {
	projectID, err := project(r)
	if err != nil {
		return err
	}
	id, err := parseOrderID(r.PathValue("orderId"))
	if err != nil {
		return err
	}
	order, err := o.svc.GetOrder(r.Context(), projectID, id)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, order)
	return nil
}
