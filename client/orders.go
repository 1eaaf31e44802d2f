package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/petstorekit/petstore"
)

// The store orders calls (beta: the API may still change them). Orders
// belong to the project of the client's API key, so unlike
// petstore.OrderService these calls name no project.

// ListOrders fetches one page of the key's project's orders. The next
// page's cursor comes from the response's Link rel="next"; a link back to
// the page itself, or to any page with its cursor, is an error, as it
// would hand the same cursor back forever, and so are a next link without a cursor that parses and a Link
// header that does not parse, as for ListPets.
func (c *Client) ListOrders(ctx context.Context, f petstore.OrderFilter) (petstore.OrderPage, error) {
	orders, next, at, err := fetchPage[petstore.Order](ctx, c, c.ordersURL(f), "listOrders", "orders")
	if err != nil {
		return petstore.OrderPage{}, err
	}
	cursor, err := nextCursor(next, at)
	if err != nil {
		return petstore.OrderPage{}, err
	}
	return petstore.OrderPage{Orders: orders, NextCursor: cursor}, nil
}

// AllOrders iterates over every order of the key's project matching f,
// page by page, following the Link rel="next" of each response. f.Limit
// sets the page size. Iteration stops after the first error, which is
// yielded with a zero Order: as for All, a Link header that does not
// parse is one. Each loop over the sequence reads the list
// again from its first page.
func (c *Client) AllOrders(ctx context.Context, f petstore.OrderFilter) iter.Seq2[petstore.Order, error] {
	return allPages[petstore.Order](ctx, c, c.ordersURL(f), "listOrders", "orders")
}

func (c *Client) ordersURL(f petstore.OrderFilter) *url.URL {
	return c.pageURL("/store/orders", f.Limit, string(f.Status), f.Cursor)
}

// CreateOrder places an order for the key's project. Like CreatePet it
// sends an Idempotency-Key (random, or the one from WithIdempotencyKey)
// and reuses it on every retry, so the order is placed once however many
// attempts it takes. An unknown pet is invalid_request naming petId.
func (c *Client) CreateOrder(ctx context.Context, o petstore.NewOrder) (petstore.Order, error) {
	key, err := idempotencyKey(ctx)
	if err != nil {
		return petstore.Order{}, err
	}
	body, err := json.Marshal(o)
	if err != nil {
		return petstore.Order{}, err
	}
	resp, data, err := c.do(ctx, "createOrder", http.MethodPost, c.endpoint("/store/orders"), body, key)
	if err != nil {
		return petstore.Order{}, err
	}
	var order petstore.Order
	if err := decodeObject(resp, data, &order, "order"); err != nil {
		return petstore.Order{}, err
	}
	return order, nil
}

// GetOrder returns the key's project's order with the given id, or
// not_found (also for an order of another project).
func (c *Client) GetOrder(ctx context.Context, id int64) (petstore.Order, error) {
	resp, data, err := c.do(ctx, "getOrder", http.MethodGet, c.endpoint("/store/orders/"+strconv.FormatInt(id, 10)), nil, "")
	if err != nil {
		return petstore.Order{}, err
	}
	var order petstore.Order
	if err := decodeObject(resp, data, &order, "order"); err != nil {
		return petstore.Order{}, err
	}
	return order, nil
}
