package httpx

import (
	"net/http"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/strictjson"
)

const ordersPath = "/store/orders"

// StabilityHeader and StabilityBeta mark the answers of beta operations
// (store orders, the dashboard API), as their OpenAPI documents do with
// x-stability.
const (
	StabilityHeader = "X-API-Stability"
	StabilityBeta   = "beta"
)

// project returns the project of the request's key; none (a wiring
// error) is unauthorized rather than served for no project.
func project(r *http.Request) (string, error) {
	key, ok := KeyFromContext(r.Context())
	if !ok || key.ProjectID == "" {
		return "", petstore.UnauthorizedError()
	}
	return key.ProjectID, nil
}

// listOrders answers GET /store/orders: one page, and a Link to the next.
func (a *api) listOrders(w http.ResponseWriter, r *http.Request) error {
	projectID, err := project(r)
	if err != nil {
		return err
	}
	f, err := parseOrderListQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, err := a.Orders.ListOrders(r.Context(), projectID, f)
	if err != nil {
		return err
	}
	if link := nextLink(a.ordersPath, page.NextCursor, f.Limit, string(f.Status)); link != "" {
		w.Header().Set("Link", link)
	}
	WriteJSON(w, http.StatusOK, page.Orders)
	return nil
}

// decodeOrder decodes POST /store/orders's body with its defaults applied,
// before the Idempotency-Key hash: sending a default is the same as
// leaving it out.
func decodeOrder(body []byte) (petstore.NewOrder, error) {
	no, err := strictjson.NewOrder(body)
	if err == nil {
		no.Normalize()
	}
	return no, err
}

// createOrder is the operation: create, respond.
func (a *api) createOrder(w http.ResponseWriter, r *http.Request, no petstore.NewOrder) {
	projectID, err := project(r)
	if err == nil {
		var order petstore.Order
		if order, err = a.Orders.CreateOrder(r.Context(), projectID, no); err == nil {
			w.Header().Set("Location", a.ordersPath+"/"+itoa(order.ID))
			WriteJSON(w, http.StatusCreated, order)
			return
		}
	}
	WriteError(w, r, err)
}

// getOrder answers GET /store/orders/{orderId}.
func (a *api) getOrder(w http.ResponseWriter, r *http.Request) error {
	projectID, err := project(r)
	if err != nil {
		return err
	}
	id, err := parseOrderID(r.PathValue("orderId"))
	if err != nil {
		return err
	}
	order, err := a.Orders.GetOrder(r.Context(), projectID, id)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, order)
	return nil
}
