package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
)

// CertPendingLimit is how long after verification a domain may wait for
// its certificate before its diagnosis gets CERT_PENDING_TOO_LONG (the
// spec's 30 minutes).
const CertPendingLimit = 30 * time.Minute

// certPendingTooLong is the finding for a certificate still missing
// CertPendingLimit after verification, with the spec's three steps.
func certPendingTooLong(name string) Finding {
	return Finding{
		Code:    FindingCertPendingTooLong,
		Message: fmt.Sprintf("No certificate has been issued for %s %v after verification.", name, CertPendingLimit),
		Fix: "1. Confirm the domain still verifies: its DNS records must still be as shown. " +
			"2. Check that CAA records on " + name + " or its parent domains do not block the certificate authority. " +
			"3. Use Re-verify to trigger a new attempt.",
	}
}

// Defaults of EngineConfig.
const (
	DefaultCNAMETarget       = "edge.petstore.localhost"
	DefaultRecordTTL         = 3600
	DefaultPropagationWindow = 48 * time.Hour
	DefaultRefreshEvery      = 2 * time.Second

	// DefaultMaxDomainsPerProject is how many custom domains a project may
	// hold at once unless EngineConfig.MaxDomainsPerProject says otherwise.
	DefaultMaxDomainsPerProject = 50
)

// EngineConfig configures an Engine. Store, Projects and Resolver are
// required; the rest have defaults.
type EngineConfig struct {
	Store    Store
	Projects Projects
	Resolver Resolver

	// CertIssuer obtains certificates for verified names. Nil means the
	// platform serves plain HTTP: verified domains go straight to active.
	CertIssuer CertIssuer

	// DNS returns the configurator of the DNS provider a project connected,
	// or nil when it connected none. Nil means no project can connect one.
	// ConfigureDNS writes a domain's records through it, and Remove deletes
	// them again through it, so records the platform wrote at a customer's
	// provider do not outlive the domain.
	DNS func(projectID string) DNSConfigurator

	// Diagnosers add findings to Get and Diagnose answers.
	Diagnosers []Diagnoser

	// CNAMETarget is the name customers point their CNAME (or ALIAS) at.
	CNAMETarget string

	// EdgeIPs are the addresses the edge listens on: offered as A/AAAA
	// records for an apex, and the only addresses an apex may resolve to.
	// When empty, the CNAMETarget's own A/AAAA records are used.
	EdgeIPs []netip.Addr

	// PlatformDomains are the platform's own names; neither they nor any
	// name below them can be added. CNAMETarget is always one of them.
	PlatformDomains []string

	// PropagationWindow is how long a pending domain is re-checked before
	// it fails: 48 hours by default, as the spec promises customers.
	PropagationWindow time.Duration

	// RefreshEvery is how often Run reloads the routing table from the
	// store, which bounds how late this process sees other processes'
	// changes. 2 seconds by default.
	RefreshEvery time.Duration

	// MaxDomainsPerProject caps the custom domains one project holds at
	// once (removed ones do not count): Add answers invalid_request beyond
	// it. 0 means DefaultMaxDomainsPerProject (50); negative means no cap.
	// The cap is exact within one engine, which serialises a project's
	// adds; engines in several processes sharing a store check it without
	// a common lock, so racing adds there may exceed it by a few.
	MaxDomainsPerProject int

	// Feed, when set, is the change feed the processes sharing Store
	// share: after this engine stores a change to a domain's routing
	// (verification, activation, failure, removal, redirects), it publishes
	// a changefeed.KindDomain change naming it, and each process passes
	// what its subscription receives to Apply, so every process stops
	// serving a removed domain within milliseconds instead of RefreshEvery.
	Feed changefeed.Feed

	// Now is the clock; time.Now by default. Tests inject a fake one.
	Now func() time.Time

	// Logger receives background errors; discarded by default.
	Logger *slog.Logger
}

// Engine is the custom-domain engine. It is safe for concurrent use; one
// engine per process, several processes may share a store.
type Engine struct {
	cfg      EngineConfig
	target   string
	platform []string
	edge     map[netip.Addr]bool

	routeMu sync.Mutex // serialises reloads and local patches of routes
	routes  atomic.Pointer[map[string]RouteAnswer]
	// admitted holds the verified, issuing and active names, for Admits;
	// reloaded and patched with routes.
	admitted atomic.Pointer[map[string]bool]

	// certsToRemove holds names whose certificate removal failed in
	// Remove; RunDue retries them. In memory only: after a restart the
	// issuer's Allowed check still refuses to serve or renew them.
	pendingMu     sync.Mutex
	certsToRemove map[string]bool

	// addLocks serialise the count-then-create of Add per project (striped
	// by a hash of the project id), so concurrent adds cannot pass the cap
	// together.
	addLocks [64]sync.Mutex

	follow follower // reloads asked for by Apply
}

// New returns an engine. It returns an error when a required part is
// missing or CNAMETarget is not a valid name. Call Refresh (or Run) to load
// the routing table of an existing store.
func New(cfg EngineConfig) (*Engine, error) {
	if cfg.Store == nil || cfg.Projects == nil || cfg.Resolver == nil {
		return nil, errors.New("domain: EngineConfig needs Store, Projects and Resolver")
	}
	if cfg.CNAMETarget == "" {
		cfg.CNAMETarget = DefaultCNAMETarget
	}
	if cfg.PropagationWindow <= 0 {
		cfg.PropagationWindow = DefaultPropagationWindow
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxDomainsPerProject == 0 {
		cfg.MaxDomainsPerProject = DefaultMaxDomainsPerProject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	target := dnsName(cfg.CNAMETarget)
	if !strings.Contains(target, ".") {
		return nil, fmt.Errorf("domain: CNAMETarget %q is not a fully qualified name", cfg.CNAMETarget)
	}
	e := &Engine{cfg: cfg, target: target, platform: []string{target}, edge: map[netip.Addr]bool{}, certsToRemove: map[string]bool{}}
	for _, p := range cfg.PlatformDomains {
		if p = dnsName(p); p != "" {
			e.platform = append(e.platform, p)
		}
	}
	for _, ip := range cfg.EdgeIPs {
		e.edge[ip.Unmap()] = true
	}
	empty := map[string]RouteAnswer{}
	e.routes.Store(&empty)
	none := map[string]bool{}
	e.admitted.Store(&none)
	return e, nil
}

// CNAMETarget returns the name customers point their records at.
func (e *Engine) CNAMETarget() string { return e.target }

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// dnsName lower-cases a name from DNS or configuration and drops the
// trailing dot, so names compare equal however they were written.
func dnsName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// Add attaches name (Unicode or ASCII form) to the project and returns it
// with the DNS records to create. created is false when the project already
// had it, in which case the existing domain is returned unchanged.
//
// When another project held the name last, the records include an
// ownership TXT record that Verify requires besides the CNAME (or ALIAS):
// no domain takeover through a CNAME the customer left behind.
//
// Returns invalid_request for an invalid name (ParseNewName: also a
// special-use TLD, mixed scripts or a confusable label), one of the
// platform's own, or when the project holds MaxDomainsPerProject domains, not_found for an unknown project, plan_required below Pro,
// deploy_required before a successful deploy, and conflict when another
// project holds the name.
func (e *Engine) Add(ctx context.Context, projectID, name string) (d Domain, created bool, err error) {
	n, err := ParseNewName(name)
	if err != nil {
		return Domain{}, false, err
	}
	for _, p := range e.platform {
		if isUnder(n.ASCII, p) {
			return Domain{}, false, invalidName("%s belongs to the platform itself and cannot be added as a custom domain", n.Unicode)
		}
	}
	p, err := e.cfg.Projects.Project(ctx, projectID)
	if err != nil {
		return Domain{}, false, err
	}
	if !p.Plan.AtLeast(petstore.PlanPro) {
		return Domain{}, false, petstore.Errorf(petstore.CodePlanRequired,
			"custom domains need the Pro plan or above; this project is on the %s plan", planName(p.Plan))
	}
	if !p.Deployed {
		return Domain{}, false, petstore.Errorf(petstore.CodeDeployRequired,
			"deploy the project successfully before adding a custom domain")
	}
	// The project's count and the new entry must not be interleaved with
	// another add of the same project, or both could take the last slot.
	lock := &e.addLocks[projectStripe(projectID, len(e.addLocks))]
	lock.Lock()
	defer lock.Unlock()
	if existing, ok, err := e.existing(ctx, projectID, n); ok || err != nil {
		return existing, false, err
	}
	if err := e.checkDomainCap(ctx, projectID); err != nil {
		return Domain{}, false, err
	}
	token, err := e.ownershipToken(ctx, projectID, n)
	if err != nil {
		return Domain{}, false, err
	}
	now := e.now()
	entry := Entry{
		OwnershipToken: token,
		ID:             "dom_" + uuid.Must(uuid.NewV7()).String(),
		ProjectID:      projectID,
		Name:           n.ASCII,
		Status:         StatusPending,
		Findings:       []Finding{},
		Observed:       Observed{Addresses: []string{}},
		PendingSince:   now,
		NextCheckAt:    now.Add(time.Minute),
		History:        []Transition{{Status: StatusPending, At: now}},
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	stored, err := e.cfg.Store.CreateDomain(ctx, entry)
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		// Lost a race: to this project (return its domain) or another.
		if existing, ok, err := e.existing(ctx, projectID, n); ok || err != nil {
			return existing, false, err
		}
	}
	if err != nil {
		return Domain{}, false, err
	}
	return e.view(ctx, stored), true, nil
}

// checkDomainCap returns invalid_request when the project already holds
// MaxDomainsPerProject domains (removed ones excluded).
func (e *Engine) checkDomainCap(ctx context.Context, projectID string) error {
	limit := e.cfg.MaxDomainsPerProject
	if limit < 0 {
		return nil
	}
	held, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID})
	if err != nil {
		return err
	}
	if len(held) >= limit {
		return petstore.Errorf(petstore.CodeInvalidRequest,
			"this project already has %d custom domains, the most it may have; remove one before adding another", len(held))
	}
	return nil
}

// projectStripe picks one of n locks for a project id (FNV-1a).
func projectStripe(projectID string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(projectID); i++ {
		h ^= uint32(projectID[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// existing returns the project's domain for n (ok true), or conflict when
// another project holds n, or ok false when n is free.
func (e *Engine) existing(ctx context.Context, projectID string, n Name) (Domain, bool, error) {
	got, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
	switch {
	case petstore.ErrorCode(err) == petstore.CodeNotFound:
		return Domain{}, false, nil
	case err != nil:
		return Domain{}, false, err
	case got.ProjectID != projectID:
		return Domain{}, false, petstore.Errorf(petstore.CodeConflict,
			"%s is already attached to another project; it must be removed there before it can be added here", n.Unicode)
	}
	return e.view(ctx, got), true, nil
}

func planName(p petstore.Plan) string {
	if p == "" {
		return "unknown"
	}
	return string(p)
}

// owned returns the project's entry for name, or not_found; a name held by
// another project is not_found too, so a project cannot probe others.
func (e *Engine) owned(ctx context.Context, projectID, name string) (Entry, error) {
	n, err := ParseName(name)
	if err != nil {
		return Entry{}, err
	}
	got, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
	if err == nil && got.ProjectID != projectID {
		err = petstore.Errorf(petstore.CodeNotFound, "domain %s not found", n.Unicode)
	}
	return got, err
}

// Get returns the project's domain with its last check and certificate
// state. Returns invalid_request for an invalid name and not_found when the
// project does not hold it.
func (e *Engine) Get(ctx context.Context, projectID, name string) (Domain, error) {
	entry, err := e.owned(ctx, projectID, name)
	if err != nil {
		return Domain{}, err
	}
	return e.view(ctx, entry), nil
}

// Find returns the domain holding name, whichever project owns it, or
// not_found. A certificate layer uses it to decide whether to answer a TLS
// handshake for name (only verified, issuing or active names).
func (e *Engine) Find(ctx context.Context, name string) (Domain, error) {
	n, err := ParseName(name)
	if err != nil {
		return Domain{}, err
	}
	entry, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
	if err != nil {
		return Domain{}, err
	}
	return e.view(ctx, entry), nil
}

// List returns the project's domains (removed ones excluded), by name.
func (e *Engine) List(ctx context.Context, projectID string) ([]Domain, error) {
	entries, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID})
	if err != nil {
		return nil, err
	}
	suspended := e.suspension(ctx, projectID)
	out := make([]Domain, 0, len(entries))
	for _, en := range entries {
		out = append(out, e.viewAs(ctx, en, suspended))
	}
	return out, nil
}

// Verify checks the domain's DNS now (the dashboard's Verify and
// Re-verify) and advances it: a pending or failed domain whose records are
// right becomes verified, then issuing (or active without a CertIssuer); an
// issuing domain gets a new certificate attempt; a failed domain whose
// records are still wrong goes back to pending for a new 48-hour window.
// A lookup failure changes nothing but the findings. Returns the domain as
// it is afterwards, or invalid_request / not_found.
func (e *Engine) Verify(ctx context.Context, projectID, name string) (Domain, error) {
	if _, err := e.owned(ctx, projectID, name); err != nil {
		return Domain{}, err
	}
	if err := e.requirePlan(ctx, projectID); err != nil {
		return Domain{}, err
	}
	for range 3 {
		entry, err := e.owned(ctx, projectID, name)
		if err != nil {
			return Domain{}, err
		}
		before := entry.Status
		now := e.now()
		res := e.check(ctx, entry.Name, outstandingProof(entry), now)
		e.apply(ctx, &entry, res, now, true)
		stored, err := e.cfg.Store.UpdateDomain(ctx, entry)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			continue // changed meanwhile, by another process or the loop: read again
		}
		if err != nil {
			return Domain{}, err
		}
		if before != stored.Status {
			e.reload(ctx)
			e.publish(ctx, stored.Name)
		}
		stored = e.recheckCert(ctx, stored)
		d := e.view(ctx, stored)
		d.Diagnosis = e.diagnosis(ctx, d, res.observed, res.findings, now)
		return d, nil
	}
	return Domain{}, petstore.Errorf(petstore.CodeConflict, "the domain is changing right now; try again")
}

// Diagnose checks DNS now, without changing the domain, and returns the
// domain with what DNS shows, the findings (the certificate layer's
// included) and the next action. Returns invalid_request / not_found.
func (e *Engine) Diagnose(ctx context.Context, projectID, name string) (Domain, error) {
	entry, err := e.owned(ctx, projectID, name)
	if err != nil {
		return Domain{}, err
	}
	now := e.now()
	res := e.check(ctx, entry.Name, outstandingProof(entry), now)
	d := e.view(ctx, entry)
	d.Diagnosis = e.diagnosis(ctx, d, res.observed, res.findings, now)
	return d, nil
}

// Remove detaches the domain: the routing answer for it is gone before
// Remove returns, redirects that mention it are dropped, the records
// ConfigureDNS wrote at the project's DNS provider are deleted, the
// CertIssuer removes its certificate, the history is kept and the name is free for any
// project. Returns invalid_request / not_found. Once the removal is stored
// it stands: a certificate that cannot be removed now is logged and
// retried by RunDue, and Remove returns nil.
func (e *Engine) Remove(ctx context.Context, projectID, name string) error {
	e.routeMu.Lock()
	var removed Entry
	err := func() error {
		defer e.routeMu.Unlock()
		for range 3 {
			entry, err := e.owned(ctx, projectID, name)
			if err != nil {
				return err
			}
			// Stop serving first: even if the store fails below, this
			// process no longer answers for the name.
			e.unadmit(entry.Name)
			e.patchRoutes(func(m map[string]RouteAnswer) {
				delete(m, entry.Name)
				for host, r := range m {
					if r.RedirectTo == entry.Name {
						// Its redirect is dropped below; the source is
						// live, so it serves its project again.
						m[host] = RouteAnswer{Kind: RouteServe, Name: host, ProjectID: r.ProjectID}
					}
				}
			})
			now := e.now()
			e.transition(&entry, StatusRemoved, now, "")
			entry.NextCheckAt = time.Time{}
			removed, err = e.cfg.Store.UpdateDomain(ctx, entry)
			if petstore.ErrorCode(err) == petstore.CodeConflict {
				continue
			}
			if err != nil {
				return err
			}
			// Still under routeMu, so no reload sees the removal without
			// the redirects being dropped too.
			if err := e.dropFromConfig(ctx, removed.ProjectID, removed.Name); err != nil {
				return err
			}
			if err := e.reloadLocked(ctx); err != nil {
				e.cfg.Logger.Warn("routing table reload failed; the next refresh retries", "err", err)
			}
			return nil
		}
		return petstore.Errorf(petstore.CodeConflict, "the domain is changing right now; try again")
	}()
	if err != nil {
		return err
	}
	e.publish(ctx, removed.Name)
	e.unconfigureDNS(ctx, removed.ProjectID, removed.Name, removed.OwnershipToken)
	if e.cfg.CertIssuer != nil {
		if err := e.cfg.CertIssuer.Remove(ctx, removed.Name); err != nil {
			// The removal stands (it is stored and the name is no longer
			// routed or admitted): failing the call now would turn a done
			// removal into an error whose retry finds nothing. The
			// background loop retries the certificate.
			e.cfg.Logger.Error("domain removed but its certificate was not; will retry", "domain", removed.Name, "err", err)
			e.pendingMu.Lock()
			e.certsToRemove[removed.Name] = true
			e.pendingMu.Unlock()
		}
	}
	return nil
}

// removeLeftoverCerts retries certificate removals that failed in Remove.
// A name attached again meanwhile keeps its certificate.
func (e *Engine) removeLeftoverCerts(ctx context.Context) {
	e.pendingMu.Lock()
	names := slices.Collect(maps.Keys(e.certsToRemove))
	e.pendingMu.Unlock()
	for _, name := range names {
		_, err := e.cfg.Store.DomainByName(ctx, name)
		switch {
		case err == nil: // attached again: its certificate is wanted
		case petstore.ErrorCode(err) != petstore.CodeNotFound:
			continue // cannot tell now; next time
		default:
			if err := e.cfg.CertIssuer.Remove(ctx, name); err != nil {
				e.cfg.Logger.Warn("removing a removed domain's certificate failed again; will retry", "domain", name, "err", err)
				continue
			}
		}
		e.pendingMu.Lock()
		delete(e.certsToRemove, name)
		e.pendingMu.Unlock()
	}
}

func (e *Engine) dropFromConfig(ctx context.Context, projectID, name string) error {
	c, err := e.cfg.Store.DomainConfig(ctx, projectID)
	if err != nil {
		return err
	}
	changed := false
	if c.Primary == name {
		c.Primary, changed = "", true
	}
	kept := c.Redirects[:0:0]
	for _, r := range c.Redirects {
		if r.From == name || r.To == name {
			changed = true
			continue
		}
		kept = append(kept, r)
	}
	if !changed {
		return nil
	}
	c.ProjectID, c.Redirects = projectID, kept
	return e.cfg.Store.PutDomainConfig(ctx, c)
}

// CertificateChanged tells the engine that name's certificate changed
// state, so an issuing domain becomes active (or failed) now rather than at
// the next background check. The certificate layer calls it.
func (e *Engine) CertificateChanged(ctx context.Context, name string) error {
	if e.cfg.CertIssuer == nil {
		return nil
	}
	n, err := ParseName(name)
	if err != nil {
		return err
	}
	for range 3 {
		entry, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
		if err != nil {
			return err
		}
		if entry.Status != StatusIssuing {
			return nil
		}
		before := entry.Status
		e.advanceCert(ctx, &entry, e.now(), false)
		if entry.Status == before {
			return nil
		}
		_, err = e.cfg.Store.UpdateDomain(ctx, entry)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			continue
		}
		if err != nil {
			return err
		}
		e.reload(ctx)
		e.publish(ctx, entry.Name)
		return nil
	}
	return nil
}

// transition records a status change in the entry and its history.
func (e *Engine) transition(entry *Entry, s Status, now time.Time, reason string) {
	if entry.Status == s && entry.Reason == reason {
		return
	}
	entry.Status, entry.Reason = s, reason
	entry.History = append(entry.History, Transition{Status: s, At: now, Reason: reason})
}

// apply records a check in the entry and moves it on. manual is true for
// Verify (a person asked), false for the background loop.
func (e *Engine) apply(ctx context.Context, entry *Entry, res checkResult, now time.Time, manual bool) {
	entry.Attempts++
	entry.CheckedAt = now
	entry.UpdatedAt = now
	entry.Findings = res.findings
	if !res.lookupFailed {
		entry.Observed = res.observed
	}
	switch {
	case res.ok:
		switch entry.Status {
		case StatusPending, StatusFailed:
			entry.VerifiedAt = now
			e.transition(entry, StatusVerified, now, "")
			e.startCert(ctx, entry, now)
		case StatusVerified:
			e.startCert(ctx, entry, now)
		case StatusIssuing:
			if manual { // Re-verify: a new certificate attempt
				entry.VerifiedAt = now
				e.startCert(ctx, entry, now)
			}
		}
	case entry.Status == StatusFailed && manual:
		entry.PendingSince = now
		e.transition(entry, StatusPending, now, "")
		entry.NextCheckAt = now.Add(time.Minute)
	case entry.Status == StatusPending:
		e.schedule(entry, now, res)
	}
}

// schedule sets when a pending entry is checked next: every minute in the
// first hour, then less often, and fails it once the window has passed.
func (e *Engine) schedule(entry *Entry, now time.Time, res checkResult) {
	deadline := entry.PendingSince.Add(e.cfg.PropagationWindow)
	if !now.Before(deadline) && res.lookupFailed {
		// "Could not check" is never a verdict: keep trying.
		entry.NextCheckAt = now.Add(RecheckInterval(now.Sub(entry.PendingSince)))
		return
	}
	if !now.Before(deadline) {
		reason := "the DNS records were not right within " + windowWords(e.cfg.PropagationWindow)
		if len(res.findings) > 0 {
			reason += ": " + res.findings[0].Message
		}
		e.transition(entry, StatusFailed, now, reason)
		entry.NextCheckAt = time.Time{}
		return
	}
	next := now.Add(RecheckInterval(now.Sub(entry.PendingSince)))
	if next.After(deadline) {
		next = deadline
	}
	entry.NextCheckAt = next
}

func windowWords(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

// RecheckInterval is how long the background loop waits before checking a
// pending domain again, given how long it has been pending: every minute in
// the first hour (most DNS changes show within minutes), then backing off
// to at most every 30 minutes.
func RecheckInterval(pending time.Duration) time.Duration {
	switch {
	case pending < time.Hour:
		return time.Minute
	case pending < 3*time.Hour:
		return 5 * time.Minute
	case pending < 12*time.Hour:
		return 15 * time.Minute
	}
	return 30 * time.Minute
}

// startCert moves a verified entry on: straight to active without a
// CertIssuer, else to issuing once the issuer accepted the request. A
// request that fails leaves it verified for the loop to retry.
func (e *Engine) startCert(ctx context.Context, entry *Entry, now time.Time) {
	if e.cfg.CertIssuer == nil {
		e.transition(entry, StatusActive, now, "")
		entry.NextCheckAt = time.Time{}
		return
	}
	if err := e.cfg.CertIssuer.Request(ctx, entry.Name); err != nil {
		e.cfg.Logger.Warn("certificate request failed; will retry", "domain", entry.Name, "err", err)
		entry.NextCheckAt = now.Add(time.Minute)
		return
	}
	e.transition(entry, StatusIssuing, now, "")
	entry.NextCheckAt = now.Add(time.Minute)
}

// advanceCert asks the CertIssuer about an issuing entry. rerequest is
// true for the background check: an issuer that knows nothing of the name
// (CertNone: it restarted, or it is another process than the one that
// verified the name, and no certificate is in shared storage) is asked
// again, at most once per check, so the domain cannot stay issuing forever.
func (e *Engine) advanceCert(ctx context.Context, entry *Entry, now time.Time, rerequest bool) {
	st, err := e.cfg.CertIssuer.Status(ctx, entry.Name)
	entry.NextCheckAt = now.Add(time.Minute)
	if err != nil {
		e.cfg.Logger.Warn("certificate status unknown; will retry", "domain", entry.Name, "err", err)
		return
	}
	switch st.State {
	case CertNone:
		if rerequest {
			if err := e.cfg.CertIssuer.Request(ctx, entry.Name); err != nil {
				e.cfg.Logger.Warn("certificate request failed; will retry", "domain", entry.Name, "err", err)
			}
		}
	case CertIssued:
		entry.UpdatedAt = now
		e.transition(entry, StatusActive, now, "")
		entry.NextCheckAt = time.Time{}
	case CertFailed:
		entry.UpdatedAt = now
		reason := st.Reason
		if reason == "" {
			reason = "the certificate authority refused the certificate"
		}
		e.transition(entry, StatusFailed, now, reason)
		entry.NextCheckAt = time.Time{}
	}
}

// RunDue does the background work due at now: re-checks pending domains
// whose time has come, fails those past the propagation window, retries
// certificate requests and removals and asks the CertIssuer about issuing
// domains. It returns how many domains it looked at. Tests call it with a
// fake clock; Run calls it in production.
func (e *Engine) RunDue(ctx context.Context, now time.Time) (int, error) {
	now = now.UTC()
	done := 0
	if e.cfg.CertIssuer != nil {
		e.removeLeftoverCerts(ctx)
	}
	for {
		due, err := e.cfg.Store.DueDomains(ctx, now, 100)
		if err != nil {
			return done, err
		}
		var changed []string
		for _, entry := range due {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			c, err := e.runOne(ctx, entry, now)
			if err != nil {
				e.cfg.Logger.Warn("background domain check failed", "domain", entry.Name, "err", err)
			}
			if c {
				changed = append(changed, entry.Name)
			}
			done++
		}
		if len(changed) > 0 {
			e.reload(ctx)
			e.publish(ctx, changed...)
		}
		if len(due) < 100 {
			return done, nil
		}
	}
}

func (e *Engine) runOne(ctx context.Context, entry Entry, now time.Time) (bool, error) {
	// Claim the entry first: of several processes sharing the store, only
	// the one whose update wins checks it now.
	entry.NextCheckAt = now.Add(2 * time.Minute)
	claimed, err := e.cfg.Store.UpdateDomain(ctx, entry)
	if err != nil {
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			return false, nil
		}
		return false, err
	}
	entry = claimed
	if e.suspension(ctx, entry.ProjectID) != "" {
		// Suspended: nothing moves on until the project upgrades.
		entry.NextCheckAt = now.Add(suspendedRecheck)
		_, err := e.cfg.Store.UpdateDomain(ctx, entry)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			err = nil
		}
		return false, err
	}
	before := entry.Status
	switch entry.Status {
	case StatusPending:
		e.apply(ctx, &entry, e.check(ctx, entry.Name, outstandingProof(entry), now), now, false)
	case StatusVerified:
		entry.UpdatedAt = now
		e.startCert(ctx, &entry, now)
	case StatusIssuing:
		if e.cfg.CertIssuer == nil {
			e.transition(&entry, StatusActive, now, "")
			entry.NextCheckAt = time.Time{}
		} else {
			e.advanceCert(ctx, &entry, now, true)
		}
	default:
		entry.NextCheckAt = time.Time{}
	}
	stored, err := e.cfg.Store.UpdateDomain(ctx, entry)
	if petstore.ErrorCode(err) == petstore.CodeConflict {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	stored = e.recheckCert(ctx, stored)
	return before != stored.Status, nil
}

// recheckCert asks the issuer once more about a domain that has just been
// stored as issuing. Request starts obtaining in the background, and when
// the certificate already exists (another process obtained it into shared
// storage) the issuer can report it before the issuing state was written;
// CertificateChanged then saw a verified domain and did nothing.
func (e *Engine) recheckCert(ctx context.Context, entry Entry) Entry {
	if entry.Status != StatusIssuing || e.cfg.CertIssuer == nil {
		return entry
	}
	if err := e.CertificateChanged(ctx, entry.Name); err != nil {
		return entry
	}
	if again, err := e.cfg.Store.DomainByName(ctx, entry.Name); err == nil {
		return again
	}
	return entry
}

// Run does the background work until ctx ends: every RefreshEvery it runs
// RunDue and reloads the routing table, so changes made by other processes
// sharing the store reach this one within that time. It returns ctx's error.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.RefreshEvery)
	defer t.Stop()
	for {
		if _, err := e.RunDue(ctx, e.now()); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Error("domain background checks failed", "err", err)
		}
		if err := e.Refresh(ctx); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Error("domain routing refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ConfigureDNS writes the domain's records at the DNS provider the project
// connected (EngineConfig.DNS) and returns the conflicts it found instead
// of overwriting them. Remove deletes those records again. Returns
// invalid_request when the project connected no DNS provider, and
// invalid_request / not_found for the name.
func (e *Engine) ConfigureDNS(ctx context.Context, projectID, name string) ([]Finding, error) {
	entry, err := e.owned(ctx, projectID, name)
	if err != nil {
		return nil, err
	}
	if err := e.requirePlan(ctx, projectID); err != nil {
		return nil, err
	}
	c := e.dnsOf(projectID)
	if c == nil {
		return nil, petstore.Errorf(petstore.CodeInvalidRequest, "this project has not connected a DNS provider; create the records by hand")
	}
	zone, recs, err := e.providerRecords(ctx, entry.Name, entry.OwnershipToken)
	if err != nil {
		return nil, err
	}
	return c.Configure(ctx, zone, recs)
}

func (e *Engine) dnsOf(projectID string) DNSConfigurator {
	if e.cfg.DNS == nil {
		return nil
	}
	return e.cfg.DNS(projectID)
}

// providerRecords returns the zone and the records ConfigureDNS writes for
// name. Remove recomputes them to delete them, so nothing extra is stored.
func (e *Engine) providerRecords(ctx context.Context, name, token string) (string, []Record, error) {
	n, err := ParseName(name)
	if err != nil {
		return "", nil, err
	}
	recs, alts, _ := e.instructions(ctx, n, token)
	if n.Kind == KindApex && len(alts) > 0 {
		// Few providers have ALIAS; the addresses work everywhere. The
		// ownership record is still needed beside them.
		recs = alts
		if token != "" {
			recs = append(slices.Clone(alts), ownershipRecord(n, token))
		}
	}
	return n.Registered, recs, nil
}

// unconfigureDNS deletes the records ConfigureDNS may have written for a
// removed domain. The configurator deletes only exact matches, so records
// the customer made for other purposes stay. A failure leaves records that
// point at the platform, which no longer answers for the name: logged, not
// returned, as the removal itself is done.
func (e *Engine) unconfigureDNS(ctx context.Context, projectID, name, token string) {
	c := e.dnsOf(projectID)
	if c == nil {
		return
	}
	zone, recs, err := e.providerRecords(ctx, name, token)
	if err == nil {
		err = c.Unconfigure(ctx, zone, recs)
	}
	if err != nil {
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not", "domain", name, "err", err)
	}
}

// instructions returns the records a customer creates for n, the apex
// alternatives and the note that goes with them. A non-empty ownership
// token adds its TXT record to the records, and a note that says why.
func (e *Engine) instructions(ctx context.Context, n Name, token string) (records, alternatives []Record, note string) {
	records, alternatives, note = e.routingInstructions(ctx, n)
	if token != "" {
		records = append(records, ownershipRecord(n, token))
		note = strings.TrimSpace(ownershipNote + " " + note)
	}
	return records, alternatives, note
}

// routingInstructions returns the records that route n to the platform.
func (e *Engine) routingInstructions(ctx context.Context, n Name) (records, alternatives []Record, note string) {
	if n.Kind == KindSubdomain {
		return []Record{{Type: "CNAME", Name: n.Label, Value: e.target, TTL: DefaultRecordTTL}}, nil, ""
	}
	records = []Record{{Type: "ALIAS", Name: "@", Value: e.target, TTL: DefaultRecordTTL}}
	for _, ip := range e.edgeList(ctx) {
		typ := "A"
		if ip.Is6() {
			typ = "AAAA"
		}
		alternatives = append(alternatives, Record{Type: typ, Name: "@", Value: ip.String(), TTL: DefaultRecordTTL})
	}
	note = "Create an ALIAS (also called ANAME) record at @. Not every DNS provider supports ALIAS or ANAME records; if yours does not, create the A/AAAA records listed as alternatives instead."
	if len(alternatives) == 0 {
		note = "Create an ALIAS (also called ANAME) record at @. Not every DNS provider supports ALIAS or ANAME records; if yours does not, use a subdomain such as www instead."
	}
	return records, alternatives, note
}

func (e *Engine) edgeList(ctx context.Context) []netip.Addr {
	if len(e.cfg.EdgeIPs) > 0 {
		return e.cfg.EdgeIPs
	}
	var out []netip.Addr
	for _, typ := range []string{"A", "AAAA"} {
		recs, err := e.cfg.Resolver.Lookup(ctx, e.target, typ)
		if err != nil {
			continue
		}
		for _, r := range recs {
			if ip, err := netip.ParseAddr(r.Value); err == nil {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

func (e *Engine) isEdge(ctx context.Context, addrs []netip.Addr) bool {
	edge := e.edge
	if len(edge) == 0 {
		edge = map[netip.Addr]bool{}
		for _, ip := range e.edgeList(ctx) {
			edge[ip] = true
		}
	}
	if len(edge) == 0 {
		return false
	}
	for _, a := range addrs {
		if !edge[a.Unmap()] {
			return false
		}
	}
	return true
}

// view turns a stored entry into what a dashboard shows, suspended when
// the project's plan is below Pro.
func (e *Engine) view(ctx context.Context, en Entry) Domain {
	return e.viewAs(ctx, en, e.suspension(ctx, en.ProjectID))
}

// viewAs is view with the project's suspension reason already known.
func (e *Engine) viewAs(ctx context.Context, en Entry, suspended string) Domain {
	n, err := ParseName(en.Name)
	if err != nil { // stored before the rules changed: show it as it is
		n = Name{ASCII: en.Name, Unicode: en.Name, Kind: KindSubdomain, Label: en.Name}
	}
	d := Domain{
		Name: n.ASCII, UnicodeName: n.Unicode, Kind: n.Kind, ProjectID: en.ProjectID,
		Status: en.Status, Reason: en.Reason, Attempts: en.Attempts,
		History: slices.Clone(en.History), CreatedAt: en.CreatedAt, VerifiedAt: en.VerifiedAt,
		Certificate: CertStatus{State: CertNone},
	}
	if d.History == nil {
		d.History = []Transition{}
	}
	suspend(&d, suspended)
	d.Records, d.Alternatives, d.Note = e.instructions(ctx, n, en.OwnershipToken)
	if e.cfg.CertIssuer != nil && en.Status != StatusPending && en.Status != StatusRemoved && !en.VerifiedAt.IsZero() {
		if st, err := e.cfg.CertIssuer.Status(ctx, en.Name); err == nil {
			d.Certificate = st
		} else {
			e.cfg.Logger.Warn("certificate status unknown", "domain", en.Name, "err", err)
		}
	}
	if c := e.dnsOf(en.ProjectID); c != nil && en.Status != StatusRemoved {
		scope, scoped := c.(DNSScope)
		d.DNSManaged = !scoped || scope.Manages(n.ASCII)
	}
	d.Diagnosis = e.diagnosis(ctx, d, en.Observed, en.Findings, en.CheckedAt)
	return d
}

// diagnosis combines DNS findings with the certificate layer's and
// decides the next action.
func (e *Engine) diagnosis(ctx context.Context, d Domain, obs Observed, dnsFindings []Finding, at time.Time) Diagnosis {
	findings := slices.Clone(dnsFindings)
	findings = append(findings, d.Certificate.Findings...)
	ds := e.cfg.Diagnosers
	if dg, ok := e.cfg.CertIssuer.(Diagnoser); ok {
		ds = append([]Diagnoser{dg}, ds...)
	}
	if d.Status != StatusRemoved {
		for _, dg := range ds {
			findings = append(findings, dg.Diagnose(ctx, d)...)
		}
	}
	// Timed from the stored VerifiedAt, so every process sharing the store
	// shows it, whatever its issuer remembers. An issuer's own finding
	// (which may carry the CA's last error) takes precedence.
	if (d.Status == StatusVerified || d.Status == StatusIssuing) && !d.VerifiedAt.IsZero() &&
		!e.now().Before(d.VerifiedAt.Add(CertPendingLimit)) &&
		!slices.ContainsFunc(findings, func(f Finding) bool { return f.Code == FindingCertPendingTooLong }) {
		findings = append(findings, certPendingTooLong(d.Name))
	}
	if findings == nil {
		findings = []Finding{}
	}
	if obs.Addresses == nil {
		obs.Addresses = []string{}
	}
	dnsOK := len(dnsFindings) == 0 && !at.IsZero()
	return Diagnosis{
		OK:         len(findings) == 0 && d.Status != StatusSuspended && (d.Status == StatusActive || dnsOK && d.Status != StatusRemoved),
		NextAction: nextAction(d.Status, findings, dnsOK),
		Observed:   obs,
		Findings:   findings,
		CheckedAt:  at,
	}
}

// nextAction decides what the customer does next.
func nextAction(s Status, findings []Finding, dnsOK bool) Action {
	switch s {
	case StatusRemoved:
		return ActionNone
	case StatusSuspended:
		return ActionUpgradePlan
	}
	has := func(codes ...string) bool {
		return slices.ContainsFunc(findings, func(f Finding) bool { return slices.Contains(codes, f.Code) })
	}
	switch {
	case has(FindingConflictingRecord, FindingCNAMEMismatch, FindingApexForeignIPs, FindingOwnershipUnproven, FindingCAABlocksCA):
		return ActionFixDNS
	case has(FindingCertPendingTooLong):
		return ActionReverify
	case s == StatusActive:
		return ActionNone
	case s == StatusFailed && has(FindingNoRecords):
		return ActionFixDNS
	case s == StatusFailed:
		return ActionReverify
	case s == StatusPending && dnsOK:
		return ActionReverify
	}
	return ActionWait
}
