package memstore

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

var _ customdomain.Store = (*Store)(nil)

// domainTables holds one Store's domains and configs.
type domainTables struct {
	mu      sync.Mutex
	byID    map[string]customdomain.Entry
	holder  map[string]string // name -> ID of the entry that is not removed
	configs map[string]customdomain.Config
}

// CreateDomain implements customdomain.Store.
func (s *Store) CreateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if err := ctx.Err(); err != nil {
		return customdomain.Entry{}, err
	}
	// The limits every store keeps, so that an entry this store takes
	// would be taken by any.
	if err := e.CheckStorable(); err != nil {
		return customdomain.Entry{}, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.holder[e.Name]; ok {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "%s is already attached to a project", e.Name)
	}
	if _, ok := t.byID[e.ID]; ok || e.ID == "" {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain id %q already used", e.ID)
	}
	e = e.Canonical()
	e.Version = 1
	t.byID[e.ID] = e
	if !e.Status.FreesName() {
		t.holder[e.Name] = e.ID
	}
	return e.Canonical(), nil
}

// DomainByName implements customdomain.Store.
func (s *Store) DomainByName(ctx context.Context, name string) (customdomain.Entry, error) {
	if err := ctx.Err(); err != nil {
		return customdomain.Entry{}, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.holder[name]
	if !ok {
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain %s not found", name)
	}
	return t.byID[id].Canonical(), nil
}

// UpdateDomain implements customdomain.Store.
func (s *Store) UpdateDomain(ctx context.Context, e customdomain.Entry) (customdomain.Entry, error) {
	if err := ctx.Err(); err != nil {
		return customdomain.Entry{}, err
	}
	if err := e.CheckState(); err != nil {
		return customdomain.Entry{}, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, ok := t.byID[e.ID]
	switch {
	case !ok:
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeNotFound, "domain %s not found", e.ID)
	case cur.Status == customdomain.StatusRemoved && e.Status != customdomain.StatusRemoved:
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain %s was removed", cur.Name)
	case cur.Version != e.Version:
		return customdomain.Entry{}, petstore.Errorf(petstore.CodeConflict, "domain %s changed meanwhile", cur.Name)
	}
	// The name and owner are fixed at creation: they are the claim.
	e.Name, e.ProjectID, e.CreatedAt = cur.Name, cur.ProjectID, cur.CreatedAt
	e = e.Canonical()
	e.Version = cur.Version + 1
	t.byID[e.ID] = e
	if e.Status.FreesName() && t.holder[e.Name] == e.ID {
		// Only its own hold: a released entry's name may already be
		// held by a newer entry.
		delete(t.holder, e.Name)
	}
	return e.Canonical(), nil
}

// ListDomains implements customdomain.Store.
func (s *Store) ListDomains(ctx context.Context, q customdomain.DomainQuery) ([]customdomain.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []customdomain.Entry{}
	for _, e := range t.byID {
		if q.ProjectID != "" && e.ProjectID != q.ProjectID {
			continue
		}
		if q.Name != "" && e.Name != q.Name {
			continue
		}
		if q.Status == "" && e.Status == customdomain.StatusRemoved || q.Status != "" && e.Status != q.Status {
			continue
		}
		out = append(out, e.Canonical())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// DueDomains implements customdomain.Store.
func (s *Store) DueDomains(ctx context.Context, now time.Time, limit int) ([]customdomain.Entry, error) {
	return s.due(ctx, now, limit, func(e customdomain.Entry) time.Time { return e.NextCheckAt })
}

// due returns at most limit entries whose time at is set and not after
// now, earliest first, then by ID.
func (s *Store) due(ctx context.Context, now time.Time, limit int, at func(customdomain.Entry) time.Time) ([]customdomain.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []customdomain.Entry{}
	for _, e := range t.byID {
		if t := at(e); !t.IsZero() && !t.After(now) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if ti, tj := at(out[i]), at(out[j]); !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return out[i].ID < out[j].ID
	})
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		out[i] = out[i].Canonical()
	}
	return out, nil
}

// DueOutboxes implements customdomain.Store.
func (s *Store) DueOutboxes(ctx context.Context, now time.Time, limit int) ([]customdomain.Entry, error) {
	return s.due(ctx, now, limit, func(e customdomain.Entry) time.Time { return e.OutboxDueAt })
}

// DomainConfig implements customdomain.Store.
func (s *Store) DomainConfig(ctx context.Context, projectID string) (customdomain.Config, error) {
	if err := ctx.Err(); err != nil {
		return customdomain.Config{}, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.configs[projectID]
	c.ProjectID = projectID
	c.Redirects = slices.Clone(c.Redirects)
	if c.Redirects == nil {
		c.Redirects = []customdomain.Redirect{}
	}
	return c, nil
}

// PutDomainConfig implements customdomain.Store.
func (s *Store) PutDomainConfig(ctx context.Context, c customdomain.Config) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.ProjectID == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "config needs a project")
	}
	if err := petstore.CheckText("domain config project id", c.ProjectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	c.Redirects = slices.Clone(c.Redirects)
	t.configs[c.ProjectID] = c
	return nil
}

// ListDomainConfigs implements customdomain.Store.
func (s *Store) ListDomainConfigs(ctx context.Context) ([]customdomain.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.dom
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []customdomain.Config{}
	for _, c := range t.configs {
		if c.Primary == "" && len(c.Redirects) == 0 {
			continue
		}
		c.Redirects = slices.Clone(c.Redirects)
		if c.Redirects == nil {
			c.Redirects = []customdomain.Redirect{}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].ProjectID, out[j].ProjectID) < 0 })
	return out, nil
}
