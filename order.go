package petstore

import (
	"context"
	"math"
	"time"
)

// Store orders are the first beta resource: their shape and behaviour may
// still change, which the API says with x-stability and X-API-Stability.
// Unlike pets, which form one shared catalogue, orders belong to a
// project: every call names the project of the caller's API key, and an
// order of another project does not exist for it.

// OrderStatus is where an order stands. The three values are those of
// swagger-petstore v3's Order.
type OrderStatus string

// The three values of OrderStatus.
const (
	OrderPlaced    OrderStatus = "placed"
	OrderApproved  OrderStatus = "approved"
	OrderDelivered OrderStatus = "delivered"
)

// OrderStatuses lists the valid order statuses in their documented order.
func OrderStatuses() []OrderStatus { return []OrderStatus{OrderPlaced, OrderApproved, OrderDelivered} }

// Valid reports whether s is one of the three order statuses.
func (s OrderStatus) Valid() bool {
	switch s {
	case OrderPlaced, OrderApproved, OrderDelivered:
		return true
	}
	return false
}

// ParseOrderStatus parses an exact, lower-case order status. Anything else
// is an invalid_request error naming the accepted values.
func ParseOrderStatus(s string) (OrderStatus, error) {
	if st := OrderStatus(s); st.Valid() {
		return st, nil
	}
	return "", OrderStatusError()
}

// Order is a store order of one project. ID is assigned by the store on
// creation. ShipDate is in UTC at microsecond precision and omitted from
// JSON when the order has none.
type Order struct {
	ID       int64       `json:"id"`
	PetID    int64       `json:"petId"`
	Quantity int32       `json:"quantity"`
	ShipDate time.Time   `json:"shipDate,omitzero"`
	Status   OrderStatus `json:"status"`
	Complete bool        `json:"complete"`
}

// NewOrder is the body of an order's creation: the fields a client may
// set. A zero Quantity means DefaultOrderQuantity and an empty Status
// OrderPlaced; OrderService.CreateOrder applies both before Validate.
type NewOrder struct {
	PetID    int64       `json:"petId"`
	Quantity int32       `json:"quantity,omitempty"`
	ShipDate time.Time   `json:"shipDate,omitzero"`
	Status   OrderStatus `json:"status,omitempty"`
	Complete bool        `json:"complete,omitempty"`
}

// DefaultOrderQuantity is the quantity of an order created without one.
const DefaultOrderQuantity = 1

// Normalize applies the defaults (quantity 1, status placed) and brings
// ShipDate to UTC at microsecond precision, the precision every store
// keeps, so that what CreateOrder returns is what GetOrder returns later.
func (o *NewOrder) Normalize() {
	if o.Quantity == 0 {
		o.Quantity = DefaultOrderQuantity
	}
	if o.Status == "" {
		o.Status = OrderPlaced
	}
	if !o.ShipDate.IsZero() {
		o.ShipDate = o.ShipDate.UTC().Truncate(time.Microsecond)
	}
}

// Validate checks a normalized NewOrder: a pet id >= 1, a quantity >= 1,
// one of the three statuses, and a ship date whose UTC year is 1 to 9999
// (RFC 3339 cannot write others). It returns invalid_request naming the
// field. Whether the pet exists is for OrderService.CreateOrder to check.
func (o NewOrder) Validate() error {
	switch {
	case o.PetID < 1:
		return Errorf(CodeInvalidRequest, "petId must be the id of an existing pet")
	case o.Quantity < 1:
		return Errorf(CodeInvalidRequest, "quantity must be an integer from 1 to %d", math.MaxInt32)
	case !o.Status.Valid():
		return OrderStatusError()
	case !o.ShipDate.IsZero() && (o.ShipDate.UTC().Year() < 1 || o.ShipDate.UTC().Year() > 9999):
		return Errorf(CodeInvalidRequest, "shipDate must be an RFC 3339 date-time between years 0001 and 9999 in UTC")
	}
	return nil
}

// OrderFilter selects a page of a project's orders. Limit is 1..100 (0
// means DefaultLimit), Status filters when set, and Cursor continues after
// a previous page's NextCursor.
type OrderFilter struct {
	Limit  int
	Status OrderStatus
	Cursor string
}

// OrderPage is one page of orders in ascending id order and the cursor of
// the next page, empty on the last page.
type OrderPage struct {
	Orders     []Order
	NextCursor string
}

// OrderQuery is what an OrderStore lists: at most Limit orders of
// ProjectID with an id greater than AfterID, in ascending id order, with
// Status when it is set.
type OrderQuery struct {
	ProjectID string
	Status    OrderStatus
	AfterID   int64
	Limit     int
}

// OrderService is the store orders API (beta). Every method acts for one
// project, the project of the caller's API key.
type OrderService interface {
	// ListOrders returns one page of the project's orders in ascending id
	// order. Returns invalid_request for a limit outside 1..100 (0 means
	// 20), an unknown status or a malformed cursor.
	ListOrders(ctx context.Context, projectID string, filter OrderFilter) (OrderPage, error)

	// CreateOrder applies the defaults, validates the order and stores it
	// for the project. Returns invalid_request naming the offending field,
	// petId included when no such pet exists.
	CreateOrder(ctx context.Context, projectID string, order NewOrder) (Order, error)

	// GetOrder returns the project's order with the given id. Returns
	// not_found if no such order exists in the project (any id <= 0, and
	// the orders of other projects, included).
	GetOrder(ctx context.Context, projectID string, id int64) (Order, error)
}

// OrderStore persists orders. Implementations must be safe for concurrent
// use, honour context cancellation, and report an unreachable backend as
// unavailable. storetest checks the first two (see PetStore).
type OrderStore interface {
	// CreateOrder stores a valid, normalized order for projectID and
	// assigns it a new, unique id greater than every id assigned before
	// (ids are unique across projects).
	CreateOrder(ctx context.Context, projectID string, order NewOrder) (Order, error)

	// GetOrder returns the order with the given id if it belongs to
	// projectID, or not_found.
	GetOrder(ctx context.Context, projectID string, id int64) (Order, error)

	// ListOrders returns at most q.Limit orders of q.ProjectID with id >
	// q.AfterID in ascending id order, filtered by q.Status when it is
	// set. It never returns nil for an empty result.
	ListOrders(ctx context.Context, q OrderQuery) ([]Order, error)
}

// OrderBackend is what NewOrderService needs: orders to keep, and pets to
// check that an order's pet exists. memstore and bunstore provide both.
type OrderBackend interface {
	OrderStore
	GetPet(ctx context.Context, id int64) (Pet, error)
}

// Orders implements OrderService over an OrderBackend: it validates and
// defaults input, checks the pet, and turns pages into cursors.
type Orders struct {
	store OrderBackend
}

var _ OrderService = (*Orders)(nil)

// NewOrderService returns the order service over store.
func NewOrderService(store OrderBackend) *Orders { return &Orders{store: store} }

// ListOrders implements OrderService.
func (s *Orders) ListOrders(ctx context.Context, projectID string, f OrderFilter) (OrderPage, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 1 || limit > MaxLimit:
		return OrderPage{}, Errorf(CodeInvalidRequest, "limit must be an integer from 1 to 100")
	}
	if f.Status != "" && !f.Status.Valid() {
		return OrderPage{}, OrderStatusError()
	}
	var after int64
	if f.Cursor != "" {
		id, err := DecodeCursor(f.Cursor)
		if err != nil {
			return OrderPage{}, err
		}
		after = id
	}
	// One row more than asked tells whether a next page exists.
	orders, err := s.store.ListOrders(ctx, OrderQuery{ProjectID: projectID, Status: f.Status, AfterID: after, Limit: limit + 1})
	if err != nil {
		return OrderPage{}, err
	}
	page := OrderPage{Orders: orders}
	if len(orders) > limit {
		page.Orders = orders[:limit]
		page.NextCursor = EncodeCursor(orders[limit-1].ID)
	}
	if page.Orders == nil {
		page.Orders = []Order{}
	}
	return page, nil
}

// CreateOrder implements OrderService.
func (s *Orders) CreateOrder(ctx context.Context, projectID string, o NewOrder) (Order, error) {
	o.Normalize()
	if err := o.Validate(); err != nil {
		return Order{}, err
	}
	if _, err := s.store.GetPet(ctx, o.PetID); err != nil {
		if ErrorCode(err) == CodeNotFound {
			return Order{}, Errorf(CodeInvalidRequest, "petId %d is not the id of an existing pet", o.PetID)
		}
		return Order{}, err
	}
	return s.store.CreateOrder(ctx, projectID, o)
}

// GetOrder implements OrderService.
func (s *Orders) GetOrder(ctx context.Context, projectID string, id int64) (Order, error) {
	if id <= 0 {
		return Order{}, OrderNotFound(id)
	}
	return s.store.GetOrder(ctx, projectID, id)
}

// OrderNotFound is the not_found error for an order that does not exist
// in the caller's project. Stores return it for a missing order and for
// one of another project alike, so that ids reveal nothing across projects.
func OrderNotFound(id int64) *Error { return Errorf(CodeNotFound, "order %d not found", id) }
