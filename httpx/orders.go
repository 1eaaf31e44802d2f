package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

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
	no, err := decodeNewOrder(body)
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

// decodeNewOrder reads an order's creation body with the strictness of
// decodeNewPet (strictjson.Object: exactly one JSON object and nothing after it,
// valid UTF-8, no member name repeated, ignoring case); fields matched
// exactly; unknown fields (a client's "id" among them) ignored. A field that is sent must be of
// its type and in range: null, "" and out-of-range numbers are 400 naming
// the field, never read as "absent", which would apply a default behind
// the client's back. petId must be an integer; whether it is >= 1 and
// names an existing pet is the service's check.
func decodeNewOrder(body []byte) (petstore.NewOrder, error) {
	invalid := func(format string, args ...any) (petstore.NewOrder, error) {
		return petstore.NewOrder{}, petstore.Errorf(petstore.CodeInvalidRequest, format, args...)
	}
	fields, err := strictjson.Object(body)
	if err != nil {
		return petstore.NewOrder{}, err
	}
	var no petstore.NewOrder
	raw, ok := fields["petId"]
	if !ok {
		return invalid("petId is required")
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return invalid("petId must be an integer >= 1 that fits in 64 bits")
		}
		return invalid("petId must be an integer >= 1")
	}
	no.PetID = id
	if raw, ok := fields["quantity"]; ok {
		n, err := strconv.ParseInt(string(raw), 10, 32)
		if err != nil || n < 1 {
			return invalid("quantity must be an integer from 1 to %d", math.MaxInt32)
		}
		no.Quantity = int32(n)
	}
	if raw, ok := fields["shipDate"]; ok {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return invalid("shipDate must be an RFC 3339 date-time string")
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return invalid("shipDate must be an RFC 3339 date-time such as 2026-05-01T12:00:00Z")
		}
		if t.IsZero() {
			// The zero instant is how "no ship date" is kept.
			return invalid("shipDate must be later than 0001-01-01T00:00:00Z")
		}
		no.ShipDate = t
	}
	if raw, ok := fields["status"]; ok {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil || !petstore.OrderStatus(s).Valid() {
			return petstore.NewOrder{}, petstore.OrderStatusError()
		}
		no.Status = petstore.OrderStatus(s)
	}
	if raw, ok := fields["complete"]; ok {
		switch string(raw) {
		case "true":
			no.Complete = true
		case "false":
		default:
			return invalid("complete must be true or false")
		}
	}
	return no, nil
}
