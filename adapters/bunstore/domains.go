package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

var _ customdomain.Store = (*Store)(nil)

type domainRow struct {
	bun.BaseModel `bun:"table:domains"`

	ID          string `bun:"id,pk"`
	ProjectID   string `bun:"project_id,notnull"`
	Name        string `bun:"name,notnull"`
	HeldName    string `bun:"held_name,nullzero"` // NULL once removed: frees the name
	Status      string `bun:"status,notnull"`
	NextCheckNS int64  `bun:"next_check_ns,nullzero"` // NULL: never checked again
	// OutboxDueNS is when the events in the entry's outbox (in Data) are
	// next handed over; NULL when it has none
	// (20261127000001_domain_outbox.go).
	OutboxDueNS int64  `bun:"outbox_due_ns,nullzero"`
	CreatedNS   int64  `bun:"created_ns,notnull"`
	Version     int64  `bun:"version,notnull"`
	Data        string `bun:"data,notnull"` // the whole entry as JSON
	// OwnershipToken is the entry's TXT proof value, NULL when it needs
	// none. A column (20261122000005_domain_ownership.go) so an operator
	// can see which names wait for a proof; the column is the truth.
	OwnershipToken string `bun:"ownership_token,nullzero"`
}

func newDomainRow(e customdomain.Entry) (domainRow, error) {
	e = e.Canonical()
	data, err := json.Marshal(e)
	if err != nil {
		return domainRow{}, err
	}
	r := domainRow{ID: e.ID, ProjectID: e.ProjectID, Name: e.Name, Status: string(e.Status),
		CreatedNS: e.CreatedAt.UnixNano(), Version: e.Version, Data: string(data), OwnershipToken: e.OwnershipToken}
	if !e.Status.FreesName() {
		r.HeldName = e.Name
	}
	if !e.NextCheckAt.IsZero() {
		r.NextCheckNS = e.NextCheckAt.UnixNano()
	}
	if !e.OutboxDueAt.IsZero() {
		r.OutboxDueNS = e.OutboxDueAt.UnixNano()
	}
	return r, nil
}

func (r domainRow) entry() (customdomain.Entry, error) {
	var e customdomain.Entry
	if err := json.Unmarshal([]byte(r.Data), &e); err != nil {
		return customdomain.Entry{}, err
	}
	e.Version = r.Version // the column is the truth; the JSON may lag by design
	e.OwnershipToken = r.OwnershipToken
	return e.Canonical(), nil
}

func (s *Store) scanDomains(ctx context.Context, op string, q *bun.SelectQuery) ([]customdomain.Entry, error) {
	var rows []domainRow
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, mapErr(ctx, op, err)
	}
	out := make([]customdomain.Entry, 0, len(rows))
	for _, r := range rows {
		e, err := r.entry()
		if err != nil {
			return nil, mapErr(ctx, op, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// CreateDomain implements customdomain.Store.
func (s *Store) CreateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if e.ID == "" {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain id %q already used", e.ID)
	}
	if err := e.CheckStorable(); err != nil {
		return customdomain.Entry{}, err
	}
	e.Version = 1
	row, err := newDomainRow(e)
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "create domain", err)
	}
	if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		err = mapErr(ctx, "create domain", err)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "%s is already attached to a project", e.Name)
		}
		return customdomain.Entry{}, err
	}
	return e.Canonical(), nil
}

// DomainByName implements customdomain.Store.
func (s *Store) DomainByName(ctx context.Context, name string) (customdomain.Entry, error) {
	if petstore.CheckText("", name, petstore.MaxDomainNameBytes) != nil {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain not found") // no entry has the name
	}
	var row domainRow
	err := s.db.NewSelect().Model(&row).Where("held_name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain %s not found", name)
	}
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "domain by name", err)
	}
	e, err := row.entry()
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "domain by name", err)
	}
	return e, nil
}

// UpdateDomain implements customdomain.Store. The UPDATE is guarded by the
// version read: of two processes writing one version, exactly one matches
// a row and the other gets conflict.
func (s *Store) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if err := e.CheckState(); err != nil { // the input first, as every store
		return customdomain.Entry{}, err
	}
	if petstore.CheckText("", e.ID, petstore.MaxDomainIDBytes) != nil {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain not found") // no entry has the id
	}
	var cur domainRow
	err := s.db.NewSelect().Model(&cur).Where("id = ?", e.ID).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain %s not found", e.ID)
	case err != nil:
		return customdomain.Entry{}, mapErr(ctx, "update domain", err)
	case cur.Status == string(customdomain.StatusRemoved) && e.Status != customdomain.StatusRemoved:
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain %s was removed", cur.Name)
	case cur.Version != e.Version:
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain %s changed meanwhile", cur.Name)
	}
	curEntry, err := cur.entry()
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "update domain", err)
	}
	// The name and owner are fixed at creation: they are the claim.
	e.Name, e.ProjectID, e.CreatedAt = cur.Name, cur.ProjectID, curEntry.CreatedAt
	e.Version = cur.Version + 1
	row, err := newDomainRow(e)
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "update domain", err)
	}
	res, err := s.db.NewUpdate().Model(&row).
		Column("held_name", "status", "next_check_ns", "outbox_due_ns", "version", "data", "ownership_token").
		Where("id = ? AND version = ?", e.ID, cur.Version).Exec(ctx)
	if err != nil {
		return customdomain.Entry{}, mapErr(ctx, "update domain", err)
	}
	// The version always changes, so MySQL counts the row whether or not
	// the connection sets clientFoundRows.
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain %s changed meanwhile", cur.Name)
	}
	return e.Canonical(), nil
}

// ListDomains implements customdomain.Store.
func (s *Store) ListDomains(ctx context.Context, q customdomain.DomainQuery) ([]customdomain.Entry, error) {
	if petstore.CheckText("", q.ProjectID, petstore.MaxProjectIDBytes) != nil || petstore.CheckText("", q.Name, petstore.MaxDomainNameBytes) != nil {
		return []customdomain.Entry{}, ctx.Err() // no entry has the project or name
	}
	sel := s.db.NewSelect().Model((*domainRow)(nil))
	if q.ProjectID != "" {
		sel = sel.Where("project_id = ?", q.ProjectID)
	}
	if q.Name != "" {
		sel = sel.Where("name = ?", q.Name)
	}
	if q.Status == "" {
		sel = sel.Where("status <> ?", string(customdomain.StatusRemoved))
	} else {
		sel = sel.Where("status = ?", string(q.Status))
	}
	return s.scanDomains(ctx, "list domains", sel.Order("name ASC", "created_ns ASC", "id ASC"))
}

// DueDomains implements customdomain.Store, of every status, from the
// domains_next_check index: removed entries (kept for good) have no next
// check unless records of theirs are still to be deleted, so they are
// never read otherwise.
func (s *Store) DueDomains(ctx context.Context, now time.Time, limit int) ([]customdomain.Entry, error) {
	if limit == 0 {
		return []customdomain.Entry{}, ctx.Err()
	}
	sel := s.db.NewSelect().Model((*domainRow)(nil)).
		Where("next_check_ns IS NOT NULL").
		Where("next_check_ns <= ?", now.UnixNano()).
		Order("next_check_ns ASC", "id ASC")
	if limit > 0 {
		sel = sel.Limit(int64(limit))
	}
	return s.scanDomains(ctx, "due domains", sel)
}

// DueOutboxes implements customdomain.Store from the domains_outbox_due
// index: only entries with events still to hand over have the column set.
func (s *Store) DueOutboxes(ctx context.Context, now time.Time, limit int) ([]customdomain.Entry, error) {
	if limit == 0 {
		return []customdomain.Entry{}, ctx.Err()
	}
	sel := s.db.NewSelect().Model((*domainRow)(nil)).
		Where("outbox_due_ns IS NOT NULL").
		Where("outbox_due_ns <= ?", now.UnixNano()).
		Order("outbox_due_ns ASC", "id ASC")
	if limit > 0 {
		sel = sel.Limit(int64(limit))
	}
	return s.scanDomains(ctx, "due outboxes", sel)
}

type domainConfigRow struct {
	bun.BaseModel `bun:"table:domain_configs"`

	ProjectID string `bun:"project_id,pk"`
	Data      string `bun:"data,notnull"` // primary and redirects as JSON
}

func (r domainConfigRow) config() (customdomain.Config, error) {
	var c customdomain.Config
	if err := json.Unmarshal([]byte(r.Data), &c); err != nil {
		return customdomain.Config{}, err
	}
	c.ProjectID = r.ProjectID
	if c.Redirects == nil {
		c.Redirects = []customdomain.Redirect{}
	}
	return c, nil
}

// DomainConfig implements customdomain.Store.
func (s *Store) DomainConfig(ctx context.Context, projectID string) (customdomain.Config, error) {
	var row domainConfigRow
	err := sql.ErrNoRows // no config has a project the store cannot keep
	if petstore.CheckText("", projectID, petstore.MaxProjectIDBytes) == nil {
		err = s.db.NewSelect().Model(&row).Where("project_id = ?", projectID).Scan(ctx)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return customdomain.Config{ProjectID: projectID, Redirects: []customdomain.Redirect{}}, nil
	}
	if err != nil {
		return customdomain.Config{}, mapErr(ctx, "domain config", err)
	}
	c, err := row.config()
	if err != nil {
		return customdomain.Config{}, mapErr(ctx, "domain config", err)
	}
	return c, nil
}

// PutDomainConfig implements customdomain.Store with one upsert statement.
func (s *Store) PutDomainConfig(ctx context.Context, c customdomain.Config) error {
	if c.ProjectID == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "config needs a project")
	}
	if err := petstore.CheckText("domain config project id", c.ProjectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	if c.Redirects == nil {
		c.Redirects = []customdomain.Redirect{}
	}
	data, err := json.Marshal(c)
	if err != nil {
		return mapErr(ctx, "put domain config", err)
	}
	row := domainConfigRow{ProjectID: c.ProjectID, Data: string(data)}
	q := s.db.NewInsert().Model(&row)
	if s.db.Dialect().Name() == dialect.MySQL {
		q = q.On("DUPLICATE KEY UPDATE").Set("data = VALUES(data)")
	} else {
		q = q.On("CONFLICT (project_id) DO UPDATE").Set("data = EXCLUDED.data")
	}
	if _, err := q.Exec(ctx); err != nil {
		return mapErr(ctx, "put domain config", err)
	}
	return nil
}

// ListDomainConfigs implements customdomain.Store.
func (s *Store) ListDomainConfigs(ctx context.Context) ([]customdomain.Config, error) {
	var rows []domainConfigRow
	if err := s.db.NewSelect().Model(&rows).Order("project_id ASC").Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list domain configs", err)
	}
	out := []customdomain.Config{}
	for _, r := range rows {
		c, err := r.config()
		if err != nil {
			return nil, mapErr(ctx, "list domain configs", err)
		}
		if c.Primary == "" && len(c.Redirects) == 0 {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}
