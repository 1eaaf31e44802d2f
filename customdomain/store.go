package customdomain

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/petstorekit/petstore"
)

// Status is where a domain is in its life.
type Status string

// Domain statuses. A domain moves pending → issuing → active; a live
// domain whose record moves away becomes misconfigured, and goes back to
// active when the record comes back, or is released when it does not
// within the grace period. It may end failed (with a reason) or removed.
// Step is the whole table.
const (
	StatusPending       Status = "pending"       // waiting for DNS
	StatusIssuing       Status = "issuing"       // DNS verified; certificate being obtained
	StatusActive        Status = "active"        // live: the edge serves it
	StatusMisconfigured Status = "misconfigured" // live, but its record no longer points here; Reason says where
	StatusFailed        Status = "failed"        // gave up; Reason says why; Verify tries again
	StatusReleased      Status = "released"      // misconfigured past the grace period: no longer served, name free
	StatusRemoved       Status = "removed"       // detached by the customer; the name is free again
)

// StatusVerified is a milestone, never a current status: the History entry
// written at the moment DNS (and the ownership proof, when one is needed)
// verified, which VerifiedAt also records. The domain moves on in the same
// write, to issuing, or to active without a CertIssuer.
const StatusVerified Status = "verified"

// FreesName reports whether an entry in status s no longer holds its name:
// removed and released entries do not, so a new CreateDomain may claim
// it. Stores use it; a released entry stays listed so that its project
// sees why it was released.
func (s Status) FreesName() bool { return s == StatusRemoved || s == StatusReleased }

// live reports whether a domain in status s is served by the edge.
func (s Status) live() bool { return s == StatusActive || s == StatusMisconfigured }

// MaxHistory is how many status changes an entry's History keeps: Step
// drops the oldest past it, so that a live domain whose DNS record flaps
// between active and misconfigured for years keeps an entry, and each
// write of it, of bounded size. What reads the history needs only its
// last changes (a domain failed while issuing, when it was removed), and
// CreatedAt and VerifiedAt keep when it was added and last verified.
const MaxHistory = 100

// MaxOutbox is how many events an entry's Outbox keeps while Events does
// not take them: a change that would add more drops the oldest, and the
// engine logs that at warn. The newest are kept, so that once Events is
// back its receivers learn the domain's latest changes and state. Each
// event carries the domain's view, history included, so this bound, with
// MaxHistory's, is what bounds an entry's size.
const MaxOutbox = 50

// Transition is one entry of a domain's history.
type Transition struct {
	Status Status    `json:"status"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Observed is what DNS showed for a name at the last check.
type Observed struct {
	CNAME     string   `json:"cname"`     // the CNAME target, "" when there is none
	Addresses []string `json:"addresses"` // A and AAAA values, never nil
}

// Entry is what a Store keeps about one domain. The engine reads an entry,
// changes it and writes it back; Version makes that write fail instead of
// overwriting a change another process made meanwhile.
type Entry struct {
	ID           string       // "dom_" + UUID v7; a re-added name gets a new ID
	ProjectID    string       // the owner
	Name         string       // ASCII (punycode) form, as ParseName returns it
	Status       Status       // current status
	Reason       string       // why it failed; "" otherwise
	Attempts     int          // DNS checks made, by Verify and in the background
	Findings     []Finding    // the last check's findings, never nil
	Observed     Observed     // the last check's DNS answers
	CheckedAt    time.Time    // time of the last check; zero before the first
	PendingSince time.Time    // start of the current 48-hour propagation window, moved on by the time the window was paused
	VerifiedAt   time.Time    // when DNS last verified; zero if never
	DriftedAt    time.Time    // when a live domain's record was first seen elsewhere; zero when it points here
	NextCheckAt  time.Time    // when the background loop looks at it next; zero: never (removed and released entries: see CertRemovalPending)
	History      []Transition // the newest MaxHistory status changes, oldest first
	// Cert is the certificate state last reported (CertNone before any),
	// so that a change is told once: domain.certificate.issued or
	// domain.certificate.failed. CertExpiring records that an issued
	// certificate's coming expiry was told (CertExpiringFinding).
	Cert CertState `json:",omitempty"`
	// Token is the entry's challenge token, one per project and name: the
	// value of the TXT record at OwnershipChallengeLabel.Name, which the
	// HTTP check through a proxy also fetches, and the seed of the DCV
	// delegation label. "" for entries stored before it existed. A new
	// entry of the name may take it as its OwnershipToken, so a Store
	// keeps it to the same limit (petstore.MaxOwnershipTokenBytes).
	Token string `json:",omitempty"`
	// OwnershipToken is the value of the TXT record at
	// OwnershipChallengeLabel + "." + Name that must prove control of
	// the name's DNS before it verifies; "" when no proof is needed. Set
	// (to Token) on creation when the name was last held by another
	// project, or lies under another project's wildcard (see Engine.Add),
	// so a CNAME left pointing at the shared target cannot hand the name
	// to whoever adds it next.
	OwnershipToken string
	// DNSRecords are the records Engine.ConfigureDNS created at the DNS
	// provider, as the provider's zone held them after the write (names
	// relative to the registered domain, value and TTL): removing or
	// releasing the domain deletes exactly these, never a record that was
	// there before or that the customer made or changed. nil when it
	// created none, and, on a removed or released entry, once they are
	// deleted or handed to the same project's new domain of the name.
	DNSRecords []Record `json:",omitempty"`
	// CertRemovalPending is set on a removed or released entry, in the
	// write that removes or releases it when there is a CertIssuer, while
	// the CertIssuer may still hold the name's certificate: its removal
	// failed, or is not recorded yet. It is cleared once the certificate
	// is removed, or once the name is attached again, by any project:
	// the certificate is the platform's, for the name, and the new
	// domain uses it (its own removal or release removes it in turn).
	//
	// On a removed or released entry, NextCheckAt is set while the
	// certificate's removal or the deletion of DNSRecords is pending: it
	// is when any engine's RunDue next tries them, found through
	// DueDomains. Each try first moves it on (a version-checked write, so
	// one replica at a time tries), and it is set back to zero once
	// neither is pending. An engine tries only what it is configured to
	// do (a CertIssuer, DNS), and leaves the rest due when it was.
	CertRemovalPending bool `json:",omitempty"`
	// Outbox holds the lifecycle events of changes stored in this entry
	// that the Events port has not taken yet, oldest first: the write
	// that stores a change also stores its events (the transactional
	// outbox), so a change never stands without them. The engine hands
	// them to Events right after that write and then removes them with a
	// version-checked write; what is still here at OutboxDueAt (the
	// hand-off failed, or the process died) any engine's RunDue hands
	// over, found through DueOutboxes. nil when empty.
	Outbox []PendingEvent `json:",omitempty"`
	// OutboxDueAt is when RunDue next hands over the events still in
	// Outbox; zero when Outbox is empty.
	OutboxDueAt time.Time `json:",omitzero"`
	// WindowPausedAt is set on a pending entry while its project is
	// suspended (StatusSuspended), or its plan cannot be read and the
	// engine never read it (Engine.held): the time of its last
	// check before the background loop found the project so (or
	// PendingSince, when later). The first check once the project is back
	// on Pro moves PendingSince on by the time since then and clears it,
	// so time spent waiting, when the domain is not checked, does not
	// count against the propagation window. Zero otherwise.
	WindowPausedAt time.Time `json:",omitzero"`
	// CreatedAt orders a name's entries: each is after the name's entries
	// before it, even when the engine that created one of those had a
	// clock ahead of this one's (the engine dates it a millisecond after them).
	CreatedAt time.Time
	UpdatedAt time.Time
	Version   int64 // set by the store: 1 on create, +1 on each update
}

// Canonical returns a copy of e that shares no slices with it, with empty
// rather than nil slices (but DNSRecords nil when empty, as entries stored
// before it existed read) and every time in UTC: the form in which every
// Store returns entries, so that entries from any store compare alike.
// It keeps the newest MaxHistory transitions and MaxOutbox events, so
// that an entry stored before those bounds existed, and past them, reads
// as one every store takes again.
func (e Entry) Canonical() Entry {
	e.Findings = slices.Clone(e.Findings)
	if e.Findings == nil {
		e.Findings = []Finding{}
	}
	for i := range e.Findings {
		e.Findings[i].Records = slices.Clone(e.Findings[i].Records)
	}
	e.Observed.Addresses = slices.Clone(e.Observed.Addresses)
	if e.Observed.Addresses == nil {
		e.Observed.Addresses = []string{}
	}
	e.DNSRecords = slices.Clone(e.DNSRecords)
	if len(e.DNSRecords) == 0 {
		e.DNSRecords = nil
	}
	e.Outbox = slices.Clone(newest(e.Outbox, MaxOutbox))
	if len(e.Outbox) == 0 {
		e.Outbox = nil
	}
	for i := range e.Outbox {
		e.Outbox[i].Domain = bytes.Clone(e.Outbox[i].Domain)
		e.Outbox[i].CreatedAt = e.Outbox[i].CreatedAt.UTC()
	}
	e.History = slices.Clone(newest(e.History, MaxHistory))
	if e.History == nil {
		e.History = []Transition{}
	}
	for i := range e.History {
		e.History[i].At = e.History[i].At.UTC()
	}
	for _, t := range []*time.Time{&e.CheckedAt, &e.PendingSince, &e.VerifiedAt, &e.DriftedAt, &e.NextCheckAt, &e.OutboxDueAt, &e.WindowPausedAt, &e.CreatedAt, &e.UpdatedAt} {
		*t = t.UTC()
	}
	return e
}

// newest returns the last n elements of s, or s when it has no more.
func newest[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// PendingEvent is one lifecycle event of a domain, as the write that
// stored its change stored it in the entry's Outbox, and as Events
// receives it.
type PendingEvent struct {
	// ID is "evt_" and a UUID v7, made once with the change: every
	// hand-off of the event, by any engine, carries the same ID, so the
	// receiving side stores it once and its receivers deduplicate by it.
	ID        string    `json:"id"`
	Type      string    `json:"type"` // EventAdded, EventVerified, …
	CreatedAt time.Time `json:"createdAt"`
	// Domain is the domain as the dashboard showed it when the change
	// was stored: a Domain in JSON, the same bytes at every hand-off.
	Domain json.RawMessage `json:"domain"`
}

// Redirect sends requests for From to To with an HTTP status.
type Redirect struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Status int    `json:"status"` // 301 (default), 302, 307 or 308
}

// Config is a project's primary domain and redirects, in the shape the
// dashboard shows and accepts.
type Config struct {
	ProjectID string     `json:"-"`
	Primary   string     `json:"primary"`
	Redirects []Redirect `json:"redirects"` // never nil
}

// DomainQuery selects entries for ListDomains.
type DomainQuery struct {
	ProjectID string // "" means every project
	Name      string // "" means every name; else the ASCII name, exactly
	Status    Status // "" means every status except removed
}

// Store persists domains and per-project configs. Implementations must be
// safe for concurrent use, also across processes sharing one database, and
// must honour context cancellation. storetest's Domains suite checks all of
// this.
//
// Times are stored with at least millisecond precision and read back in UTC.
type Store interface {
	// CreateDomain stores a new entry (its ID, name and project set) and
	// returns it with Version 1. The name is claimed atomically: returns
	// conflict if any entry whose status does not FreesName holds the name, whichever
	// project owns it, so that of two concurrent creates exactly one wins.
	CreateDomain(ctx context.Context, e Entry) (Entry, error)

	// DomainByName returns the entry that holds name (its status does not
	// FreesName), or not_found.
	DomainByName(ctx context.Context, name string) (Entry, error)

	// UpdateDomain replaces the stored entry with e.ID if its stored Version
	// equals e.Version, and returns e with the next Version. Returns
	// not_found for an unknown ID and conflict when the entry changed since
	// it was read, or was already removed and e is not (a removed entry
	// stays removed; it is written again only for its pending cleanup,
	// CertRemovalPending, DNSRecords and NextCheckAt, and for its Outbox).
	// Writing a status that FreesName (removed, released) frees the name
	// for a new CreateDomain.
	UpdateDomain(ctx context.Context, e Entry) (Entry, error)

	// ListDomains returns the entries q selects, ordered by name, then by
	// creation. It never returns nil.
	ListDomains(ctx context.Context, q DomainQuery) ([]Entry, error)

	// DueDomains returns at most limit entries whose NextCheckAt is set
	// and not after now, earliest first, whatever their status: a removed
	// or released entry has it set while its certificate is still to be
	// removed, or records at the DNS provider deleted. Every engine asks
	// every RefreshEvery, and removed entries are kept for good, so it
	// must not read the entries that are not due (bunstore: an index on
	// the next check time).
	DueDomains(ctx context.Context, now time.Time, limit int) ([]Entry, error)

	// DueOutboxes returns at most limit entries whose OutboxDueAt is set
	// and not after now, earliest first (then by ID), whatever their
	// status: their Outbox holds events Events has not taken yet. Every
	// engine asks every RefreshEvery, so it must not read the entries
	// that are not due (bunstore: an index on the outbox's due time).
	DueOutboxes(ctx context.Context, now time.Time, limit int) ([]Entry, error)

	// DomainConfig returns a project's config; a project that never stored
	// one gets an empty config (ProjectID set, no primary, no redirects).
	DomainConfig(ctx context.Context, projectID string) (Config, error)

	// PutDomainConfig replaces the config of c.ProjectID. Returns
	// invalid_request if c.ProjectID is empty: a config belongs to a
	// project.
	PutDomainConfig(ctx context.Context, c Config) error

	// ListDomainConfigs returns every stored config that has a primary or a
	// redirect, ordered by project ID. It never returns nil.
	ListDomainConfigs(ctx context.Context) ([]Config, error)
}

// Project is what the engine needs to know about a project before it
// accepts a domain for it.
type Project struct {
	ID       string
	Plan     petstore.Plan
	Deployed bool // the project has at least one successful deploy
}

// Projects is implemented by the platform: it knows plans and deploys.
type Projects interface {
	// Project returns the project with id, or not_found.
	Project(ctx context.Context, id string) (Project, error)
}

// ProjectsFunc adapts a function to Projects.
type ProjectsFunc func(ctx context.Context, id string) (Project, error)

// Project implements Projects.
func (f ProjectsFunc) Project(ctx context.Context, id string) (Project, error) { return f(ctx, id) }

// CheckStorable refuses, with invalid_request, a new entry whose id,
// project id or name is longer than a store keeps
// (petstore.MaxDomainIDBytes, MaxProjectIDBytes, MaxDomainNameBytes) or
// not petstore.Storable, or whose state CheckState refuses. Stores call it
// before they create an entry.
func (e Entry) CheckStorable() error {
	if err := petstore.CheckText("domain id", e.ID, petstore.MaxDomainIDBytes); err != nil {
		return err
	}
	if err := petstore.CheckText("domain project id", e.ProjectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	if err := petstore.CheckText("domain name", e.Name, petstore.MaxDomainNameBytes); err != nil {
		return err
	}
	return e.CheckState()
}

// CheckState refuses, with invalid_request, an entry whose status, token
// or ownership token is longer than a store keeps
// (petstore.MaxDomainStatusBytes, MaxOwnershipTokenBytes) or not
// petstore.Storable, or whose History or Outbox holds more than
// MaxHistory transitions or MaxOutbox events. Stores call it before they
// update an entry, whose id, project and name the update keeps as stored.
func (e Entry) CheckState() error {
	if len(e.History) > MaxHistory {
		return petstore.Errorf(petstore.CodeInvalidRequest, "domain history holds more than %d status changes", MaxHistory)
	}
	if len(e.Outbox) > MaxOutbox {
		return petstore.Errorf(petstore.CodeInvalidRequest, "domain outbox holds more than %d events", MaxOutbox)
	}
	if err := petstore.CheckText("domain status", string(e.Status), petstore.MaxDomainStatusBytes); err != nil {
		return err
	}
	if err := petstore.CheckText("domain token", e.Token, petstore.MaxOwnershipTokenBytes); err != nil {
		return err
	}
	return petstore.CheckText("domain ownership token", e.OwnershipToken, petstore.MaxOwnershipTokenBytes)
}
