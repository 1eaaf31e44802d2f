package memstore

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/webhook"
)

var _ webhook.Store = (*Store)(nil)

// webhookTable holds webhook endpoints and the outbox of deliveries.
type webhookTable struct {
	mu         sync.Mutex
	endpoints  map[string]webhook.Endpoint // by ID
	deliveries []*memDelivery              // in the order enqueued
}

// memDelivery is a delivery with its lease.
type memDelivery struct {
	d          webhook.Delivery
	token      string
	leaseUntil time.Time
}

func (s *Store) webhookTable() *webhookTable {
	s.webhooksOnce.Do(func() { s.webhooks = &webhookTable{endpoints: map[string]webhook.Endpoint{}} })
	return s.webhooks
}

// copyDelivery returns d with slices of its own, so that callers and the
// table never share memory.
func copyDelivery(d webhook.Delivery) webhook.Delivery {
	d.Payload = bytes.Clone(d.Payload)
	d.Answers = append([]webhook.Answer{}, d.Answers...)
	return d
}

// CreateWebhookEndpoint implements webhook.Store.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e webhook.Endpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.CheckStorable(); err != nil {
		return err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.endpoints[e.ID]; ok {
		return petstore.Errorf(petstore.CodeConflict, "webhook endpoint %s already exists", e.ID)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	t.endpoints[e.ID] = e
	return nil
}

// WebhookEndpoints implements webhook.Store.
func (s *Store) WebhookEndpoints(ctx context.Context, projectID string) ([]webhook.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []webhook.Endpoint{}
	for _, e := range t.endpoints {
		if e.ProjectID == projectID {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// DeleteWebhookEndpoint implements webhook.Store.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, projectID, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.endpoints[id]; !ok || e.ProjectID != projectID {
		return webhook.EndpointNotFound(id)
	}
	delete(t.endpoints, id)
	t.deliveries = slices.DeleteFunc(t.deliveries, func(m *memDelivery) bool { return m.d.EndpointID == id })
	return nil
}

// RotateWebhookSecret implements webhook.Store. The store is in one
// process: previousExpiresAt is kept as it is, on the callers' clock.
func (s *Store) RotateWebhookSecret(ctx context.Context, projectID, id, secret string, _, previousExpiresAt time.Time) (webhook.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return webhook.Endpoint{}, err
	}
	if err := webhook.CheckSecretStorable(secret); err != nil {
		return webhook.Endpoint{}, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.endpoints[id]
	if !ok || e.ProjectID != projectID {
		return webhook.Endpoint{}, webhook.EndpointNotFound(id)
	}
	e.PreviousSecret, e.PreviousSecretExpiresAt = e.Secret, previousExpiresAt.UTC()
	if previousExpiresAt.IsZero() {
		e.PreviousSecret, e.PreviousSecretExpiresAt = "", time.Time{}
	}
	e.Secret = secret
	t.endpoints[id] = e
	return e, nil
}

// EnqueueWebhookEvent implements webhook.Store.
func (s *Store) EnqueueWebhookEvent(ctx context.Context, ev webhook.Event) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := ev.CheckStorable(); err != nil {
		return 0, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.deliveries {
		if m.d.EventID == ev.ID {
			return 0, petstore.Errorf(petstore.CodeConflict, "webhook event %s already enqueued", ev.ID)
		}
	}
	ids := []string{}
	for id, e := range t.endpoints {
		if e.ProjectID == ev.ProjectID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.deliveries = append(t.deliveries, &memDelivery{d: webhook.Delivery{
			EventID: ev.ID, EndpointID: id, ProjectID: ev.ProjectID, Type: ev.Type,
			Payload: bytes.Clone(ev.Payload), CreatedAt: ev.CreatedAt.UTC(),
			State: webhook.StatePending, NextAttemptAt: ev.CreatedAt.UTC(), Answers: []webhook.Answer{},
		}})
	}
	return len(ids), nil
}

// ClaimWebhookDeliveries implements webhook.Store. The store is in one
// process: a delivery's Age is now - CreatedAt, on the callers' clock.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, token string, now, leaseUntil time.Time, limit, perEndpoint int) ([]webhook.Due, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	var due []*memDelivery
	for _, m := range t.deliveries {
		if _, ok := t.endpoints[m.d.EndpointID]; ok && m.d.State == webhook.StatePending &&
			!m.d.NextAttemptAt.After(now) && !m.leaseUntil.After(now) {
			due = append(due, m)
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].d.NextAttemptAt.Before(due[j].d.NextAttemptAt) })
	out := []webhook.Due{}
	taken := map[string]int{} // by endpoint
	for _, m := range due {
		if len(out) >= limit {
			break
		}
		if taken[m.d.EndpointID] >= perEndpoint {
			continue
		}
		taken[m.d.EndpointID]++
		m.token, m.leaseUntil = token, leaseUntil.UTC()
		e := t.endpoints[m.d.EndpointID]
		if !now.Before(e.PreviousSecretExpiresAt) {
			e.PreviousSecret, e.PreviousSecretExpiresAt = "", time.Time{} // its overlap has ended
		}
		out = append(out, webhook.Due{Delivery: copyDelivery(m.d), Endpoint: e, Age: now.Sub(m.d.CreatedAt)})
	}
	return out, nil
}

// FinishWebhookAttempt implements webhook.Store. The store is in one
// process: its clock is the callers', and d.NextAttemptAt is kept as it
// is, whatever now is.
func (s *Store) FinishWebhookAttempt(ctx context.Context, token string, _ time.Time, d webhook.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.deliveries {
		if m.d.EventID != d.EventID || m.d.EndpointID != d.EndpointID {
			continue
		}
		if m.token != token || token == "" {
			return petstore.Errorf(petstore.CodeConflict, "the delivery of %s to %s is not leased to this claim", d.EventID, d.EndpointID)
		}
		m.d.State, m.d.Attempts, m.d.NextAttemptAt = d.State, d.Attempts, d.NextAttemptAt.UTC()
		m.d.Answers = copyDelivery(d).Answers
		m.token, m.leaseUntil = "", time.Time{}
		return nil
	}
	return petstore.Errorf(petstore.CodeNotFound, "the delivery of %s to %s is gone", d.EventID, d.EndpointID)
}

// WebhookDeliveries implements webhook.Store.
func (s *Store) WebhookDeliveries(ctx context.Context, projectID, endpointID string, limit int) ([]webhook.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.endpoints[endpointID]; !ok || e.ProjectID != projectID {
		return nil, webhook.EndpointNotFound(endpointID)
	}
	out := []webhook.Delivery{}
	for _, m := range t.deliveries {
		if m.d.EndpointID == endpointID {
			out = append(out, copyDelivery(m.d))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return strings.Compare(out[i].EventID, out[j].EventID) > 0
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// PurgeWebhookDeliveries implements webhook.Store.
func (s *Store) PurgeWebhookDeliveries(ctx context.Context, now, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := s.webhookTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, e := range t.endpoints {
		if e.PreviousSecret != "" && !now.Before(e.PreviousSecretExpiresAt) {
			e.PreviousSecret, e.PreviousSecretExpiresAt = "", time.Time{}
			t.endpoints[id] = e
		}
	}
	n := len(t.deliveries)
	t.deliveries = slices.DeleteFunc(t.deliveries, func(m *memDelivery) bool {
		_, ok := t.endpoints[m.d.EndpointID]
		return !ok || (m.d.State != webhook.StatePending && m.d.CreatedAt.Before(before))
	})
	return n - len(t.deliveries), nil
}
