package webhook

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/petstorekit/petstore"
)

// The event types, one for each state change of a custom domain.
const (
	TypeDomainAdded             = "domain.added"
	TypeDomainVerified          = "domain.verified"
	TypeDomainActive            = "domain.active"
	TypeDomainMisconfigured     = "domain.misconfigured"
	TypeDomainCertificateIssued = "domain.certificate.issued"
	TypeDomainCertificateFailed = "domain.certificate.failed"
	TypeDomainRemoved           = "domain.removed"
)

// Types returns every event type, in a stable order.
func Types() []string {
	return []string{
		TypeDomainAdded, TypeDomainVerified, TypeDomainActive, TypeDomainMisconfigured,
		TypeDomainCertificateIssued, TypeDomainCertificateFailed, TypeDomainRemoved,
	}
}

// knownType reports whether t is one of Types.
func knownType(t string) bool { return slices.Contains(Types(), t) }

// Event is one state change, as enqueued: its Payload is the JSON body
// every endpoint of the project receives, fixed once so that each retry
// sends the same bytes with the same id.
type Event struct {
	ID        string // "evt_" and a UUID v7; the receiver's deduplication key
	ProjectID string
	Type      string
	CreatedAt time.Time
	Payload   []byte
}

// CheckStorable refuses, with invalid_request, an event whose id, project
// id or type is longer than a store keeps (petstore.MaxWebhookIDBytes,
// MaxProjectIDBytes, MaxWebhookEventTypeBytes) or not petstore.Storable.
// Stores call it before they enqueue an event.
func (ev Event) CheckStorable() error {
	if err := petstore.CheckText("webhook event id", ev.ID, petstore.MaxWebhookIDBytes); err != nil {
		return err
	}
	if err := petstore.CheckText("webhook event project id", ev.ProjectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	return petstore.CheckText("webhook event type", ev.Type, petstore.MaxWebhookEventTypeBytes)
}

// body is the JSON of a delivery:
// {"id","type","createdAt","data":{"domain":{…}}}.
type body struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Data      struct {
		Domain any `json:"domain"`
	} `json:"data"`
}

// encodeBody returns the delivery body of an event about domain.
func encodeBody(id, eventType string, at time.Time, domain any) ([]byte, error) {
	b := body{ID: id, Type: eventType, CreatedAt: at.UTC()}
	b.Data.Domain = domain
	return json.Marshal(b)
}
