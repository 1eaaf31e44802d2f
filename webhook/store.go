package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/redact"
)

// Endpoint is a project's webhook receiver.
type Endpoint struct {
	ID        string // "wh_" and a UUID v7
	ProjectID string
	URL       string
	// Secret signs the deliveries (HMAC-SHA256). It is stored as it is,
	// because signing needs it, shown to the project once when the
	// endpoint is created or its secret rolled (Service.RollSecret), and
	// never logged or listed.
	Secret    string
	CreatedAt time.Time

	// PreviousSecret is the secret Secret replaced when it was rolled,
	// kept as Secret is and never shown again: every attempt made before
	// PreviousSecretExpiresAt (on the store's clock, see Store) is signed
	// with it too, so that receivers still checking with it keep
	// accepting deliveries while they switch. "" (and a zero
	// PreviousSecretExpiresAt) when there is none.
	PreviousSecret          string
	PreviousSecretExpiresAt time.Time
}

// String describes e with its secrets masked, so that an endpoint
// printed in a log line, an error or a test failure does not show them,
// as fmt would print every field otherwise.
func (e Endpoint) String() string {
	mask := func(s string) string {
		if s == "" {
			return ""
		}
		return redact.Mask
	}
	return fmt.Sprintf("{ID:%s ProjectID:%s URL:%s Secret:%s CreatedAt:%v PreviousSecret:%s PreviousSecretExpiresAt:%v}",
		e.ID, e.ProjectID, e.URL, mask(e.Secret), e.CreatedAt, mask(e.PreviousSecret), e.PreviousSecretExpiresAt)
}

// GoString is String, for %#v.
func (e Endpoint) GoString() string { return "webhook.Endpoint" + e.String() }

// LogValue is String, for slog handlers (JSON among them) that would
// otherwise log the fields.
func (e Endpoint) LogValue() slog.Value { return slog.StringValue(e.String()) }

// CheckStorable refuses, with invalid_request, an endpoint whose id,
// project id, secret or previous secret is longer than a store keeps
// (petstore.MaxWebhookIDBytes, MaxProjectIDBytes, MaxWebhookSecretBytes)
// or not petstore.Storable. Stores call it before they create an
// endpoint.
func (e Endpoint) CheckStorable() error {
	if err := petstore.CheckText("webhook endpoint id", e.ID, petstore.MaxWebhookIDBytes); err != nil {
		return err
	}
	if err := petstore.CheckText("webhook endpoint project id", e.ProjectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	if err := CheckSecretStorable(e.Secret); err != nil {
		return err
	}
	return CheckSecretStorable(e.PreviousSecret)
}

// CheckSecretStorable refuses, with invalid_request, an endpoint secret
// longer than a store keeps (petstore.MaxWebhookSecretBytes) or not
// petstore.Storable. Stores call it before they rotate a secret.
func CheckSecretStorable(secret string) error {
	return petstore.CheckText("webhook secret", secret, petstore.MaxWebhookSecretBytes)
}

// State is where a delivery stands.
type State string

// The states of a delivery.
const (
	StatePending   State = "pending"   // waiting for its next attempt
	StateSucceeded State = "succeeded" // the receiver answered 2xx
	StateFailed    State = "failed"    // the receiver kept failing for Config.RetryFor: given up
)

// Answer is what one attempt of a delivery got back.
type Answer struct {
	Attempt    int       `json:"attempt"` // 1 for the first
	At         time.Time `json:"at"`
	StatusCode int       `json:"statusCode,omitempty"` // 0: no HTTP answer (see Error)
	Body       string    `json:"body"`                 // the answer's first MaxAnswerBody bytes
	Error      string    `json:"error,omitempty"`      // why there was no answer: timeout, refused, …; at most MaxAnswerBody bytes
	DurationMS int64     `json:"durationMs"`
}

// MaxAnswerBody is how much of a receiver's answer (its body, or why
// there was no answer) a delivery keeps, and MaxAnswers how many of its
// last answers.
const (
	MaxAnswerBody = 1024
	MaxAnswers    = 10
)

// Delivery is one event on its way to one endpoint. Its identity is the
// pair (EventID, EndpointID).
type Delivery struct {
	EventID    string
	EndpointID string
	ProjectID  string
	Type       string
	Payload    []byte
	CreatedAt  time.Time

	State         State
	Attempts      int       // made so far
	NextAttemptAt time.Time // when State is pending; zero otherwise
	Answers       []Answer  // the last MaxAnswers, oldest first; never nil from a store
}

// Due is a claimed delivery with the endpoint it goes to.
type Due struct {
	Delivery Delivery
	Endpoint Endpoint

	// Age is how long before the claim the delivery's event was enqueued,
	// on the clock the store judges due times on: the worker gives the
	// delivery up once its next attempt would fall later than
	// Config.RetryFor after that. Delivery.CreatedAt, on the enqueuing
	// process's clock, is only shown.
	Age time.Duration
}

// Store is the durable outbox of webhook deliveries and the endpoints they
// go to. memstore and bunstore implement it, and storetest.RunWebhooks
// checks the contract. Implementations must be safe for concurrent use by
// several processes sharing the store, and honour context cancellation.
//
// Every time a caller passes is on its own clock, and the processes
// sharing a store may disagree by minutes. A store they share judges
// leases, due times and the age of deliveries on one clock, its own: it
// takes a lease's length (leaseUntil - now) and a retry's wait
// (NextAttemptAt - now) from the caller's times, measures Due.Age from
// the instant it stored the event, and storetest.RunWebhooksOnOneClock
// checks it. The times it returns (NextAttemptAt) are then on its clock.
// A store in one process (memstore), or one set to (bunstore.CallerClock,
// for tests with a fake clock), judges them on the times its callers
// pass: Due.Age is then now - CreatedAt, and a rolled secret stays valid
// until the previousExpiresAt its caller passed.
type Store interface {
	// CreateWebhookEndpoint stores e. Returns conflict if its ID is taken.
	CreateWebhookEndpoint(ctx context.Context, e Endpoint) error

	// WebhookEndpoints returns the project's endpoints, oldest first
	// (then by ID). A store judging on its own clock (OwnClockStore)
	// leaves out a previous secret whose overlap ended on that clock. It
	// never returns nil.
	WebhookEndpoints(ctx context.Context, projectID string) ([]Endpoint, error)

	// DeleteWebhookEndpoint removes the project's endpoint id and its
	// deliveries. Returns not_found when the project has no such
	// endpoint, whichever project has it.
	DeleteWebhookEndpoint(ctx context.Context, projectID, id string) error

	// RotateWebhookSecret gives the project's endpoint id the secret
	// secret, in one atomic write: the secret it had becomes its
	// PreviousSecret, valid until previousExpiresAt, replacing any earlier
	// previous secret; a zero previousExpiresAt drops the secret it had
	// (PreviousSecret "", PreviousSecretExpiresAt zero). now is the
	// caller's time: a store judging on its own clock (see Store) keeps
	// the previous secret valid for previousExpiresAt - now from the
	// write, on that clock. It returns the endpoint as it now is, its
	// PreviousSecretExpiresAt on the store's clock. A concurrent
	// ClaimWebhookDeliveries or WebhookEndpoints returns the endpoint with
	// either the secrets it had or the ones it has now, never one of
	// each. Returns not_found when the project has no such endpoint,
	// whichever project has it.
	RotateWebhookSecret(ctx context.Context, projectID, id, secret string, now, previousExpiresAt time.Time) (Endpoint, error)

	// EnqueueWebhookEvent stores, in one atomic write, one pending
	// delivery of ev, due at ev.CreatedAt (on a store judging due times
	// on its own clock: at once) with no attempts, for every
	// endpoint ev.ProjectID has, and returns how many. An endpoint
	// deleted concurrently may get one; ClaimWebhookDeliveries never
	// returns it. Returns conflict, storing nothing, when a delivery of
	// ev.ID is stored already.
	EnqueueWebhookEvent(ctx context.Context, ev Event) (int, error)

	// ClaimWebhookDeliveries leases to token, until leaseUntil, at most
	// limit pending deliveries that are due (NextAttemptAt not after now)
	// and not leased (no lease, or one that ended by now), and at most
	// perEndpoint of them going to any one endpoint, and returns them
	// with their endpoints, earliest due first. It takes each endpoint's
	// earliest due, and of those the earliest, so that one endpoint's
	// backlog cannot fill a claim and hold up the others'. Each Due's Age
	// is how long before now its event was enqueued (see Store). Each
	// Due's Endpoint has its PreviousSecret only while it is valid at the
	// claim, on the store's clock, and its PreviousSecretExpiresAt on the
	// caller's: now plus how long the previous secret was still valid
	// then, so that the worker never signs with it after its end. Of
	// concurrent claims, in this process or another sharing the store,
	// each delivery goes to one. It never returns nil.
	ClaimWebhookDeliveries(ctx context.Context, token string, now, leaseUntil time.Time, limit, perEndpoint int) ([]Due, error)

	// FinishWebhookAttempt stores the outcome of an attempt of a delivery
	// leased to token: d's State, Attempts, NextAttemptAt (on the
	// caller's clock, which reads now) and Answers (identified by
	// d.EventID and d.EndpointID), and ends the lease.
	// Returns conflict, changing nothing, when the delivery is no longer
	// leased to token (another claim took it over after the lease ended),
	// and not_found when it is gone (its endpoint was deleted).
	FinishWebhookAttempt(ctx context.Context, token string, now time.Time, d Delivery) error

	// WebhookDeliveries returns at most limit deliveries of the project's
	// endpoint, newest first (by CreatedAt, then EventID descending). It
	// returns not_found when the project has no such endpoint, and never
	// nil.
	WebhookDeliveries(ctx context.Context, projectID, endpointID string, limit int) ([]Delivery, error)

	// PurgeWebhookDeliveries deletes the deliveries that are finished
	// (succeeded or failed) and were created before before (on a store
	// judging on its own clock: whose event it stored more than
	// now - before ago on that clock), and those whose endpoint is gone,
	// and returns how many. It also erases the
	// previous secrets whose validity ended by now (the caller's time;
	// on a store judging on its own clock, its clock at the purge), so
	// that a secret is not kept past its overlap.
	PurgeWebhookDeliveries(ctx context.Context, now, before time.Time) (int, error)
}

// OwnClockStore is a Store that says whether it judges on its own clock
// (see Store): bunstore's does, unless bunstore.CallerClock. When it
// does, Service.Endpoints shows what WebhookEndpoints returns as it is,
// since a process's clock may be ahead of the store's; a Store without
// the method, or one that returns false, judges on its callers' times,
// and Service.Endpoints leaves out a previous secret that ended on
// Config.Now.
type OwnClockStore interface {
	Store
	JudgesOnOwnClock() bool
}
