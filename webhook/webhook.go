// Package webhook tells a project's systems about its custom domains'
// state changes: each project registers endpoints (URLs), and every
// change is POSTed to each of them as JSON, signed as Stripe signs
// (Petstore-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>), retried
// with exponential backoff for 24 hours while the receiver fails, from a
// durable outbox (Store) that survives restarts and is shared safely by
// replicas. Receivers check deliveries with VerifyWebhook.
//
// The pure core is the event body, Sign, VerifyWebhook, the retry
// schedule and the public-address rule; Service is the shell that stores
// endpoints and events and delivers them.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/keylock"
)

// Defaults of Config.
const (
	DefaultRetryFor     = 24 * time.Hour
	DefaultTimeout      = 10 * time.Second
	DefaultLease        = 2 * time.Minute
	DefaultPollInterval = time.Second
	DefaultRetention    = 7 * 24 * time.Hour
	DefaultMaxEndpoints = 10
)

// maxAnswerHeader bounds the status line and headers of a receiver's
// answer: a delivery reads none of them but the status.
const maxAnswerHeader = 64 << 10

// deliveriesShown is how many of an endpoint's deliveries Deliveries
// returns, newest first.
const deliveriesShown = 50

// Config configures New.
type Config struct {
	Store Store // required

	// AllowPrivate lets receivers be on loopback, private, link-local and
	// other non-public addresses (-webhook-allow-private). Off, every
	// connection is checked at dial time, after DNS, so that no endpoint
	// can make the platform call into its own network.
	AllowPrivate bool

	Now    func() time.Time // nil: time.Now; tests inject a clock
	Logger *slog.Logger     // nil: discard

	RetryFor     time.Duration // how long a failing delivery is retried; 0: DefaultRetryFor
	Timeout      time.Duration // of one attempt; 0: DefaultTimeout
	Lease        time.Duration // how long a claim holds a delivery; 0: DefaultLease; more than 4 × Timeout, and attempts start only with 2 × Timeout of it left
	PollInterval time.Duration // how often Run looks for due deliveries; 0: DefaultPollInterval
	Retention    time.Duration // how long finished deliveries are kept; 0: DefaultRetention
	MaxEndpoints int           // per project; 0: DefaultMaxEndpoints

	// Jitter returns a number in [0, 1) that places each retry within
	// ±25% of its delay; nil: math/rand/v2.
	Jitter func() float64
}

// Service registers endpoints, enqueues events and delivers them. It is
// safe for concurrent use; several processes may each run one over a
// shared Store.
type Service struct {
	cfg    Config
	store  Store
	now    func() time.Time
	log    *slog.Logger
	jitter func() float64
	client *http.Client
	wake   chan struct{}

	purgeMu   sync.Mutex
	nextPurge time.Time // on s.now's clock

	// createLocks serialise CreateEndpoint's count-then-create per
	// project, so racing creates cannot pass the cap together.
	createLocks keylock.Locks
}

// New returns a Service over cfg.Store.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhook: Config.Store is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.RetryFor, DefaultRetryFor)
	def(&cfg.Timeout, DefaultTimeout)
	def(&cfg.Lease, DefaultLease)
	def(&cfg.PollInterval, DefaultPollInterval)
	def(&cfg.Retention, DefaultRetention)
	// A claim's attempts start only with 2 × Timeout of the lease left
	// (the attempt and recording its answer); a lease of twice that
	// leaves the claim itself as long again, so that a slow database
	// does not leave every claim to run out unsent.
	if cfg.Lease <= 4*cfg.Timeout {
		return nil, errors.New("webhook: Config.Lease must be longer than 4 times Config.Timeout")
	}
	if cfg.MaxEndpoints <= 0 {
		cfg.MaxEndpoints = DefaultMaxEndpoints
	}
	s := &Service{cfg: cfg, store: cfg.Store, now: cfg.Now, log: cfg.Logger, jitter: cfg.Jitter, wake: make(chan struct{}, 1)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.jitter == nil {
		s.jitter = mathrand.Float64
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = dialControl
	}
	s.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would connect where the guard cannot see
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   2,
			// A receiver's headers are read whole before anything else:
			// http's default (10 MB) would let each attempt hold that much.
			MaxResponseHeaderBytes: maxAnswerHeader,
			IdleConnTimeout:        30 * time.Second,
		},
		// A redirect is an answer, not an instruction: it counts as a
		// failure, and the platform never follows it somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s, nil
}

// CreateEndpoint registers a receiver for the project's events and
// returns it with its Secret, which is shown to the project only now.
// Returns invalid_request for a URL that is not absolute http(s), has
// credentials or a fragment, or (without Config.AllowPrivate) names a
// non-public address or localhost, and when the project already has
// Config.MaxEndpoints endpoints. The cap is exact within one Service;
// Services in several processes sharing a store check it without a
// common lock, so racing creates there may exceed it by a few.
func (s *Service) CreateEndpoint(ctx context.Context, projectID, rawURL string) (Endpoint, error) {
	u, err := parseEndpointURL(rawURL, s.cfg.AllowPrivate)
	if err != nil {
		return Endpoint{}, err
	}
	defer s.createLocks.Lock(projectID)()
	have, err := s.store.WebhookEndpoints(ctx, projectID)
	if err != nil {
		return Endpoint{}, err
	}
	if len(have) >= s.cfg.MaxEndpoints {
		return Endpoint{}, petstore.Errorf(petstore.CodeInvalidRequest, "the project already has %d webhook endpoints, the most it may have: delete one first", len(have))
	}
	e := Endpoint{
		ID: "wh_" + uuid.Must(uuid.NewV7()).String(), ProjectID: projectID, URL: u,
		Secret: newSecret(), CreatedAt: s.now().UTC(),
	}
	if err := s.store.CreateWebhookEndpoint(ctx, e); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// newSecret returns a new endpoint secret: "whsec_" and 32 random bytes.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

// Endpoints returns the project's endpoints, oldest first, without their
// secrets. PreviousSecretExpiresAt says until when a rolled secret is
// still valid, and is zero once it is not, on the store's clock (see
// OwnClockStore).
func (s *Service) Endpoints(ctx context.Context, projectID string) ([]Endpoint, error) {
	es, err := s.store.WebhookEndpoints(ctx, projectID)
	// A store judging on its own clock left out the previous secrets
	// that ended on it: judging them again on this process's clock would
	// hide some early when it is ahead.
	own, _ := s.store.(OwnClockStore)
	judged := own != nil && own.JudgesOnOwnClock()
	now := s.now()
	for i := range es {
		if es[i].PreviousSecret == "" || !judged && !now.Before(es[i].PreviousSecretExpiresAt) {
			es[i].PreviousSecretExpiresAt = time.Time{}
		}
		es[i].Secret, es[i].PreviousSecret = "", ""
	}
	return es, err
}

// Bounds of RollSecret's overlap: the dashboard API's default, and the
// longest a replaced secret stays valid.
const (
	DefaultSecretOverlap = 24 * time.Hour
	MaxSecretOverlap     = 7 * 24 * time.Hour
)

// RollSecret gives the project's endpoint a new secret, as Stripe's "roll
// secret" does, and returns the endpoint with it: like a new endpoint's,
// it is shown to the project only now. The secret it replaces stays valid
// for overlap (0: it ends now), until the returned
// PreviousSecretExpiresAt: every attempt made until then is signed with
// both (Petstore-Signature: t=…,v1=<new>,v1=<old>), so that receivers
// checking with either accept it and can switch at their own pace, and
// every later one with the new secret only. Neither secret is logged,
// listed or returned again. An endpoint has two secrets at most: rolling
// again during an overlap ends the oldest at once. An attempt already
// under way is signed as it was; its retry is signed anew. A store
// shared by processes (bunstore) keeps the overlap on its own clock, the
// database's, from the roll: every process stops signing with the old
// secret at the same instant, whatever its own clock says, and
// PreviousSecretExpiresAt is on that clock. The old secret is never used
// after the overlap, and is erased from the store at the next hourly
// purge (see Run). Returns
// invalid_request for a negative overlap or one longer than
// MaxSecretOverlap, and not_found.
func (s *Service) RollSecret(ctx context.Context, projectID, endpointID string, overlap time.Duration) (Endpoint, error) {
	if overlap < 0 || overlap > MaxSecretOverlap {
		return Endpoint{}, petstore.Errorf(petstore.CodeInvalidRequest, "the replaced secret can stay valid for 0 to 7 days (%v), not %v", MaxSecretOverlap, overlap)
	}
	if !possibleID(endpointID) {
		return Endpoint{}, EndpointNotFound(endpointID)
	}
	now := s.now().UTC()
	var until time.Time
	if overlap > 0 {
		until = now.Add(overlap)
	}
	secret := newSecret()
	e, err := s.store.RotateWebhookSecret(ctx, projectID, endpointID, secret, now, until)
	if err != nil {
		return Endpoint{}, err
	}
	// The store set the old secret's end just now, on its clock: it is
	// shown as it is, not judged on this process's clock.
	e.Secret, e.PreviousSecret = secret, ""
	return e, nil
}

// DeleteEndpoint removes the project's endpoint and its deliveries; no
// further attempt is made. Returns not_found.
func (s *Service) DeleteEndpoint(ctx context.Context, projectID, id string) error {
	if !possibleID(id) {
		return EndpointNotFound(id)
	}
	return s.store.DeleteWebhookEndpoint(ctx, projectID, id)
}

// Deliveries returns the last deliveries of the project's endpoint,
// newest first, each with its last answers. Returns not_found.
func (s *Service) Deliveries(ctx context.Context, projectID, endpointID string) ([]Delivery, error) {
	if !possibleID(endpointID) {
		return nil, EndpointNotFound(endpointID)
	}
	return s.store.WebhookDeliveries(ctx, projectID, endpointID, deliveriesShown)
}

// possibleID reports whether id could be an endpoint's ("wh_" and a
// UUID): an id from a URL may hold anything, and a store may fail on what
// it cannot even compare (PostgreSQL on a NUL byte), which is no outage.
func possibleID(id string) bool {
	return len(id) <= petstore.MaxWebhookIDBytes && petstore.Storable(id)
}

// EndpointNotFound is the not_found error for an endpoint id the project
// has no endpoint of, which every store and the Service return alike.
func EndpointNotFound(id string) *petstore.Error {
	return petstore.Errorf(petstore.CodeNotFound, "webhook endpoint %q not found", id)
}

// Enqueue records a state change of one of the project's domains for
// delivery to each of the project's endpoints: once it returns nil, the
// event is in the store and is delivered (or retried for
// Config.RetryFor) whatever happens to this process. domain is encoded
// with encoding/json as the event's data.domain (a json.RawMessage is
// sent as it is). Returns invalid_request for an unknown event type.
func (s *Service) Enqueue(ctx context.Context, projectID, eventType string, domain any) error {
	return s.EnqueueOnce(ctx, projectID, "evt_"+uuid.Must(uuid.NewV7()).String(), eventType, s.now(), domain)
}

// EnqueueOnce is Enqueue for an event whose id ("evt_" and a UUID v7) and
// time the caller made, and which it may enqueue more than once, not
// knowing whether an earlier call stored it (it failed, or its process
// ended): an id already enqueued is not enqueued again, and EnqueueOnce
// returns nil, so each endpoint gets the event once, with that id.
// Returns invalid_request for an unknown event type or an id that is not
// "evt_" and at most petstore.MaxWebhookIDBytes.
func (s *Service) EnqueueOnce(ctx context.Context, projectID, id, eventType string, createdAt time.Time, domain any) error {
	if !knownType(eventType) {
		return petstore.Errorf(petstore.CodeInvalidRequest, "unknown webhook event type %q", eventType)
	}
	if projectID == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "a webhook event needs a project")
	}
	if !strings.HasPrefix(id, "evt_") || !possibleID(id) {
		return petstore.Errorf(petstore.CodeInvalidRequest, "webhook event id %q is not evt_ and at most %d bytes", id, petstore.MaxWebhookIDBytes)
	}
	ev := Event{ID: id, ProjectID: projectID, Type: eventType, CreatedAt: createdAt.UTC()}
	var err error
	if ev.Payload, err = encodeBody(ev.ID, ev.Type, ev.CreatedAt, domain); err != nil {
		return err
	}
	n, err := s.store.EnqueueWebhookEvent(ctx, ev)
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		return nil // enqueued before, with this id: once is the promise
	}
	if err != nil {
		return err
	}
	if n > 0 {
		select { // Run delivers it now rather than at its next poll
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}
