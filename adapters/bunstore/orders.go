package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun"
)

var _ petstore.OrderStore = (*Store)(nil)

// Orders are beta and not on the hot path, so they go through bun's query
// builder rather than prepared statements of their own.

type orderRow struct {
	bun.BaseModel `bun:"table:store_orders"`

	ID         int64         `bun:"id,pk,autoincrement"`
	ProjectID  string        `bun:"project_id,notnull"`
	PetID      int64         `bun:"pet_id,notnull"`
	Quantity   int32         `bun:"quantity,notnull"`
	ShipDateUS sql.NullInt64 `bun:"ship_date_us"` // Unix microseconds; NULL: none
	Status     string        `bun:"status,notnull"`
	Complete   bool          `bun:"complete,notnull"`
}

func (r orderRow) order() petstore.Order {
	o := petstore.Order{ID: r.ID, PetID: r.PetID, Quantity: r.Quantity, Status: petstore.OrderStatus(r.Status), Complete: r.Complete}
	if r.ShipDateUS.Valid {
		o.ShipDate = time.UnixMicro(r.ShipDateUS.Int64).UTC()
	}
	return o
}

// CreateOrder implements petstore.OrderStore.
func (s *Store) CreateOrder(ctx context.Context, projectID string, o petstore.NewOrder) (petstore.Order, error) {
	if err := petstore.CheckText("order project id", projectID, petstore.MaxProjectIDBytes); err != nil {
		return petstore.Order{}, err
	}
	row := orderRow{ProjectID: projectID, PetID: o.PetID, Quantity: o.Quantity, Status: string(o.Status), Complete: o.Complete}
	if !o.ShipDate.IsZero() {
		row.ShipDateUS = sql.NullInt64{Int64: o.ShipDate.UnixMicro(), Valid: true}
	}
	q := s.db.NewInsert().Model(&row)
	if tx := s.unitTx(ctx); tx != nil { // inside CreateOnce: join its transaction
		q = q.Conn(tx)
	}
	if _, err := q.Exec(ctx); err != nil {
		return petstore.Order{}, mapErr(ctx, "create order", err)
	}
	return row.order(), nil
}

// GetOrder implements petstore.OrderStore.
func (s *Store) GetOrder(ctx context.Context, projectID string, id int64) (petstore.Order, error) {
	if petstore.CheckText("", projectID, petstore.MaxProjectIDBytes) != nil {
		return petstore.Order{}, petstore.OrderNotFound(id) // no order has the project
	}
	var row orderRow
	err := s.db.NewSelect().Model(&row).Where("id = ?", id).Where("project_id = ?", projectID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.Order{}, petstore.OrderNotFound(id)
	}
	if err != nil {
		return petstore.Order{}, mapErr(ctx, "get order", err)
	}
	return row.order(), nil
}

// ListOrders implements petstore.OrderStore: a keyset query over the
// project's index.
func (s *Store) ListOrders(ctx context.Context, q petstore.OrderQuery) ([]petstore.Order, error) {
	if q.Limit <= 0 || petstore.CheckText("", q.ProjectID, petstore.MaxProjectIDBytes) != nil {
		return []petstore.Order{}, ctx.Err()
	}
	var rows []orderRow
	sel := s.db.NewSelect().Model(&rows).Where("project_id = ?", q.ProjectID).Where("id > ?", q.AfterID)
	if q.Status != "" {
		sel = sel.Where("status = ?", string(q.Status))
	}
	if err := sel.OrderExpr("id ASC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list orders", err)
	}
	orders := make([]petstore.Order, len(rows))
	for i, r := range rows {
		orders[i] = r.order()
	}
	return orders, nil
}
