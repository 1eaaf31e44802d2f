package dashboard

import (
	"context"
	"net/http"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/webhook"
)

// Webhooks is what the dashboard needs of the webhook service, for a
// project's endpoints and their deliveries. *webhook.Service implements
// it. Every method acts for one project.
type Webhooks interface {
	CreateEndpoint(ctx context.Context, projectID, url string) (webhook.Endpoint, error)
	Endpoints(ctx context.Context, projectID string) ([]webhook.Endpoint, error)
	DeleteEndpoint(ctx context.Context, projectID, id string) error
	Deliveries(ctx context.Context, projectID, endpointID string) ([]webhook.Delivery, error)
	RollSecret(ctx context.Context, projectID, endpointID string, overlap time.Duration) (webhook.Endpoint, error)
}

var _ Webhooks = (*webhook.Service)(nil)

// webhookEndpoint is an endpoint as the API shows it: never its secret,
// except once in createdWebhook, nor the secret a roll replaced, only
// until when that one is still valid.
type webhookEndpoint struct {
	ID                      string    `json:"id"`
	URL                     string    `json:"url"`
	CreatedAt               time.Time `json:"createdAt"`
	PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt,omitzero"`
}

// createdWebhook is the body of POST <base>/api/webhooks and of POST
// <base>/api/webhooks/{id}/roll-secret.
type createdWebhook struct {
	webhookEndpoint
	Secret string `json:"secret"`
}

type webhookList struct {
	Webhooks []webhookEndpoint `json:"webhooks"`
}

// webhookDelivery is one event's delivery to an endpoint, with the
// answers of its last attempts.
type webhookDelivery struct {
	EventID       string           `json:"eventId"`
	Type          string           `json:"type"`
	CreatedAt     time.Time        `json:"createdAt"`
	State         webhook.State    `json:"state"`
	Attempts      int              `json:"attempts"`
	NextAttemptAt time.Time        `json:"nextAttemptAt,omitzero"`
	Answers       []webhook.Answer `json:"answers"`
}

type webhookDeliveries struct {
	Deliveries []webhookDelivery `json:"deliveries"`
}

func viewEndpoint(e webhook.Endpoint) webhookEndpoint {
	return webhookEndpoint{ID: e.ID, URL: e.URL, CreatedAt: e.CreatedAt.UTC(), PreviousSecretExpiresAt: e.PreviousSecretExpiresAt.UTC()}
}

// webhooks is h, or, on a dashboard without Webhooks, an operation that
// answers not_found saying why.
func (d *dashboard) webhooks(h handler) handler {
	if d.Webhooks != nil {
		return h
	}
	return func(http.ResponseWriter, *http.Request, petstore.APIKey, string) error {
		return petstore.Errorf(petstore.CodeNotFound, "webhooks are not enabled on this platform")
	}
}

func (d *dashboard) handleListWebhooks(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	es, err := d.Webhooks.Endpoints(r.Context(), key.ProjectID)
	if err != nil {
		return err
	}
	out := webhookList{Webhooks: make([]webhookEndpoint, 0, len(es))}
	for _, e := range es {
		out.Webhooks = append(out.Webhooks, viewEndpoint(e))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (d *dashboard) handleCreateWebhook(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	u, err := decodeNewWebhook(body)
	if err != nil {
		return err
	}
	e, err := d.Webhooks.CreateEndpoint(r.Context(), key.ProjectID, u)
	if err != nil {
		return err
	}
	// The one answer that holds the secret: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, createdWebhook{webhookEndpoint: viewEndpoint(e), Secret: e.Secret})
	return nil
}

func (d *dashboard) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	if err := d.Webhooks.DeleteEndpoint(r.Context(), key.ProjectID, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handleRollWebhookSecret gives the endpoint a new secret and answers it,
// once, as creation does. The body is optional: without one, the old
// secret stays valid for webhook.DefaultSecretOverlap.
func (d *dashboard) handleRollWebhookSecret(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	var body []byte
	if r.ContentLength != 0 || r.Header.Get("Content-Type") != "" {
		var err error
		if body, err = httpx.ReadBody(w, r); err != nil {
			return err
		}
	}
	overlap, err := decodeRollSecret(body)
	if err != nil {
		return err
	}
	e, err := d.Webhooks.RollSecret(r.Context(), key.ProjectID, r.PathValue("id"), overlap)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, createdWebhook{webhookEndpoint: viewEndpoint(e), Secret: e.Secret})
	return nil
}

func (d *dashboard) handleWebhookDeliveries(w http.ResponseWriter, r *http.Request, key petstore.APIKey, _ string) error {
	ds, err := d.Webhooks.Deliveries(r.Context(), key.ProjectID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := webhookDeliveries{Deliveries: make([]webhookDelivery, 0, len(ds))}
	for _, dl := range ds {
		out.Deliveries = append(out.Deliveries, webhookDelivery{
			EventID: dl.EventID, Type: dl.Type, CreatedAt: dl.CreatedAt.UTC(), State: dl.State,
			Attempts: dl.Attempts, NextAttemptAt: dl.NextAttemptAt, Answers: orEmpty(dl.Answers),
		})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// decodeNewWebhook reads {"url": "https://…"}. The URL itself is checked
// by the webhook service, which knows the rules.
func decodeNewWebhook(body []byte) (string, error) {
	var in struct {
		URL *string `json:"url"`
	}
	if err := httpx.DecodeObject(body, &in); err != nil {
		return "", err
	}
	if in.URL == nil || *in.URL == "" {
		return "", petstore.Errorf(petstore.CodeInvalidRequest, "url is required: the address that receives the events, such as https://example.com/webhooks")
	}
	return *in.URL, nil
}

// maxOverlapSeconds is webhook.MaxSecretOverlap in seconds.
const maxOverlapSeconds = int64(webhook.MaxSecretOverlap / time.Second)

// decodeRollSecret reads the optional {"expiresInSeconds": n}: how long
// the secret being replaced stays valid, a whole number from 0 (it ends
// now) to 604800 (7 days). An empty body, a missing member or null means
// webhook.DefaultSecretOverlap.
func decodeRollSecret(body []byte) (time.Duration, error) {
	if len(body) == 0 {
		return webhook.DefaultSecretOverlap, nil
	}
	var in struct {
		ExpiresInSeconds *int64 `json:"expiresInSeconds"`
	}
	if err := httpx.DecodeObject(body, &in); err != nil {
		return 0, err
	}
	if in.ExpiresInSeconds == nil {
		return webhook.DefaultSecretOverlap, nil
	}
	if n := *in.ExpiresInSeconds; n < 0 || n > maxOverlapSeconds {
		return 0, petstore.Errorf(petstore.CodeInvalidRequest, "expiresInSeconds must be from 0 (the old secret ends now) to %d (7 days), not %d", maxOverlapSeconds, n)
	}
	return time.Duration(*in.ExpiresInSeconds) * time.Second, nil
}
