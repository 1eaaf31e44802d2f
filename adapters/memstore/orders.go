package memstore

import (
	"context"
	"sort"
	"sync"

	"github.com/petstorekit/petstore"
)

var _ petstore.OrderStore = (*Store)(nil)

// orderTable holds one store's orders, with a lock of its own so that
// order traffic never waits behind pet writes.
type orderTable struct {
	mu     sync.RWMutex
	orders []storedOrder // ascending id order: ids only grow
	nextID int64
}

type storedOrder struct {
	project string
	order   petstore.Order
}

// CreateOrder implements petstore.OrderStore.
func (s *Store) CreateOrder(ctx context.Context, projectID string, o petstore.NewOrder) (petstore.Order, error) {
	if err := ctx.Err(); err != nil {
		return petstore.Order{}, err
	}
	if err := petstore.CheckText("order project id", projectID, petstore.MaxProjectIDBytes); err != nil {
		return petstore.Order{}, err
	}
	t := s.orders
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextID++
	order := petstore.Order{ID: t.nextID, PetID: o.PetID, Quantity: o.Quantity, ShipDate: o.ShipDate, Status: o.Status, Complete: o.Complete}
	t.orders = append(t.orders, storedOrder{project: projectID, order: order})
	if u := s.unitOf(ctx); u != nil {
		u.mu.Lock()
		u.orders = append(u.orders, order.ID)
		u.mu.Unlock()
	}
	return order, nil
}

// GetOrder implements petstore.OrderStore.
func (s *Store) GetOrder(ctx context.Context, projectID string, id int64) (petstore.Order, error) {
	if err := ctx.Err(); err != nil {
		return petstore.Order{}, err
	}
	t := s.orders
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := sort.Search(len(t.orders), func(i int) bool { return t.orders[i].order.ID >= id })
	if i < len(t.orders) && t.orders[i].order.ID == id && t.orders[i].project == projectID {
		return t.orders[i].order, nil
	}
	return petstore.Order{}, petstore.OrderNotFound(id)
}

// ListOrders implements petstore.OrderStore.
func (s *Store) ListOrders(ctx context.Context, q petstore.OrderQuery) ([]petstore.Order, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []petstore.Order{}, nil
	}
	t := s.orders
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]petstore.Order, 0, min(q.Limit, 128))
	start := sort.Search(len(t.orders), func(i int) bool { return t.orders[i].order.ID > q.AfterID })
	for _, so := range t.orders[start:] {
		if len(out) >= q.Limit {
			break
		}
		if so.project == q.ProjectID && (q.Status == "" || so.order.Status == q.Status) {
			out = append(out, so.order)
		}
	}
	return out, nil
}
