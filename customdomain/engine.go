package customdomain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/internal/keylock"
	"golang.org/x/net/publicsuffix"
)

// CertPendingLimit is how long after verification a domain may wait for
// its certificate before its diagnosis gets CERT_PENDING_TOO_LONG (the
// spec's 30 minutes).
const CertPendingLimit = 30 * time.Minute

// CertPendingTooLongFinding is the one wording of CERT_PENDING_TOO_LONG:
// no certificate for name after (since verification), with the spec's
// three steps; lastErr, when the certificate layer knows it, is the last
// attempt's failure. The engine raises it after CertPendingLimit; a
// certificate layer may raise it sooner (adapters/acme's PendingTimeout).
func CertPendingTooLongFinding(name string, after time.Duration, lastErr string) Finding {
	msg := fmt.Sprintf("No certificate has been issued for %s %s after verification.", name, words(after))
	if lastErr != "" {
		msg += " The last attempt failed: " + lastErr
	}
	return Finding{
		Code:    FindingCertPendingTooLong,
		Message: msg,
		Fix: "1. Confirm the domain still verifies: its DNS records must still be as shown. " +
			"2. Check that CAA records on " + name + " or its parent domains do not block the certificate authority. " +
			"3. Use Re-verify to trigger a new attempt.",
	}
}

// CertExpiredFinding is the one wording of CERT_EXPIRED: name's
// certificate expired at notAfter without being renewed, so browsers
// refuse it; lastErr, when the certificate layer knows it, is why the
// last renewal failed. A certificate layer raises it, with the state
// CertFailed, for a certificate it still holds past its notAfter.
func CertExpiredFinding(name string, notAfter time.Time, lastErr string) Finding {
	msg := fmt.Sprintf("The certificate of %s expired at %s and has not been renewed: browsers refuse it.", name, notAfter.UTC().Format(time.RFC3339))
	if lastErr != "" {
		msg += " The last renewal failed: " + lastErr
	}
	return Finding{
		Code:    FindingCertExpired,
		Message: msg,
		Fix: "1. Confirm the domain still verifies: its DNS records must still be as shown. " +
			"2. Check that CAA records on " + name + " or its parent domains do not block the certificate authority. " +
			"3. Click Re-verify to renew it now; the platform also keeps trying on its own, and this goes away once it is renewed.",
	}
}

// CertExpiryWarning is how long before an issued certificate expires,
// not yet replaced by a renewal, the engine warns of it: certificate
// layers renew well before (certmagic from a third of the lifetime left,
// 30 days of a 90-day certificate), so one this close has kept failing
// to renew for days. For a certificate shorter-lived than four times
// this, the warning comes a quarter of its lifetime before it expires.
const CertExpiryWarning = 7 * 24 * time.Hour

// expiresSoon reports whether c is an issued certificate that expires
// within its warning time (CertExpiryWarning, or a quarter of its
// lifetime when that is shorter) of now.
func expiresSoon(c CertStatus, now time.Time) bool {
	if c.State != CertIssued || c.NotAfter.IsZero() {
		return false
	}
	warn := CertExpiryWarning
	if !c.NotBefore.IsZero() && c.NotAfter.After(c.NotBefore) {
		warn = min(warn, c.NotAfter.Sub(c.NotBefore)/4)
	}
	return c.NotAfter.Sub(now) <= warn
}

// CertExpiringFinding is the one wording of CERT_EXPIRING: name's
// certificate expires at notAfter and renewing it has not succeeded.
func CertExpiringFinding(name string, notAfter time.Time) Finding {
	return Finding{
		Code:    FindingCertExpiring,
		Message: fmt.Sprintf("The certificate of %s expires at %s and renewing it has not succeeded yet: once it expires, browsers refuse it.", name, notAfter.UTC().Format(time.RFC3339)),
		Fix: "1. Confirm the domain still verifies: its DNS records must still be as shown. " +
			"2. Check that CAA records on " + name + " or its parent domains do not block the certificate authority. " +
			"3. Click Re-verify to renew it now; the platform also keeps trying on its own, and this goes away once it is renewed.",
	}
}

// Defaults of EngineConfig.
const (
	DefaultCNAMETarget       = "edge.petstore.localhost"
	DefaultRecordTTL         = 3600
	DefaultPropagationWindow = 48 * time.Hour
	DefaultRefreshEvery      = 2 * time.Second

	// DefaultRecheckActive is how often a live domain's record is checked
	// again for drift unless EngineConfig.RecheckActive says otherwise.
	DefaultRecheckActive = time.Hour
	// DefaultDriftGrace is how long a misconfigured domain is still served
	// unless EngineConfig.DriftGrace says otherwise.
	DefaultDriftGrace = 72 * time.Hour

	// DefaultMaxDomainsPerProject is how many custom domains a project may
	// hold at once unless EngineConfig.MaxDomainsPerProject says otherwise.
	DefaultMaxDomainsPerProject = 50

	// DefaultHandOffTimeout is how long the engine waits for each call of
	// Events.DomainEvent unless EngineConfig.HandOffTimeout says
	// otherwise: half of OutboxLease, so the engine still records the
	// hand-off within the lease.
	DefaultHandOffTimeout = OutboxLease / 2
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
	// those records again through it, whoever made them, so none pointing
	// at the platform outlives the domain in a zone the platform manages.
	DNS func(projectID string) DNSConfigurator

	// Diagnosers add findings to Get and Diagnose answers.
	Diagnosers []Diagnoser

	// CNAMETarget is the name customers point their CNAME (or ALIAS) at.
	CNAMETarget string

	// EdgeIPs are the addresses the edge listens on: offered as A/AAAA
	// records for an apex, and the only addresses an apex may resolve to.
	// When empty, the CNAMETarget's own A/AAAA records are used, as last
	// resolved (by Refresh, and by Run every RefreshEvery).
	EdgeIPs []netip.Addr

	// PlatformDomains are the platform's own names; neither they nor any
	// name below them can be added, nor the wildcard one label above one
	// (*.example.com for api.example.com), whose certificate would answer
	// its handshakes. A wildcard entry (*.apps.example.com) stands for
	// every name below its base. CNAMETarget is always one of them, and
	// so is the zone it is in (petstore.app for edge.petstore.app) unless
	// that is a public suffix: a wildcard there would serve the target and
	// the platform's other names.
	PlatformDomains []string

	// PropagationWindow is how long a pending domain is re-checked before
	// it fails: 48 hours by default, as the spec promises customers. Time
	// its project spends suspended, or with a plan the engine cannot read
	// and never read, does not count (Entry.WindowPausedAt).
	PropagationWindow time.Duration

	// RecheckActive is how often the record of a live (active or
	// misconfigured) domain is checked again, so that one pointed
	// elsewhere is noticed: 1 hour by default; negative means never. With
	// a CertIssuer and no drift checks, an active domain's certificate
	// alone is still looked at every hour, so that an expiry renewing has
	// not averted is told (CertExpiringFinding).
	RecheckActive time.Duration

	// DriftGrace is how long a domain whose record moved away
	// (misconfigured) is still served, without certificate renewal,
	// before it is released: 72 hours by default. A record that comes back
	// within it makes the domain active again with no customer action.
	DriftGrace time.Duration

	// Events, when set, is told every lifecycle event (see Events).
	Events Events

	// HandOffTimeout bounds each call of Events.DomainEvent, whatever the
	// caller's deadline: an Events whose storage hangs (its database
	// paused) must not hold up the change or the background round that
	// hands it an event, and the events wait in the domain's entry anyway.
	// Once one call runs out of it, the other hand-offs of the same round
	// (one RunDue, or one call of the engine such as Add or Verify) are
	// not tried, and their events wait in their entries for a later
	// round: a round waits for an Events that hangs about this long in
	// all, however many domains it changes. A call that answers, but
	// after more than half of it, counts as running out of it: an Events
	// that answers just inside the timeout would cost each hand-off nearly
	// all of it. Once a call was that slow, or ran out of time, the
	// engine's requests hand over no events (they wait in their entries,
	// due after OutboxLease) until a hand-off of RunDue, which still
	// tries, is quick again. 0 means DefaultHandOffTimeout
	// (5 seconds). It must be below OutboxLease, so that the engine that
	// stored a change records its hand-off before the other engines hand
	// the events over again; New refuses it otherwise.
	HandOffTimeout time.Duration

	// CDNs are the address ranges the diagnosis recognises as a CDN's
	// proxy (PROXIED). Nil means DefaultCDNs, the embedded
	// cdn-ranges.txt; ParseCDNs reads a newer copy.
	CDNs []CDN

	// DCVZone, when set, is a zone the platform's own DNS serves where the
	// certificate layer writes DNS-01 TXT records: each domain's
	// instructions then include the delegation CNAME
	// _acme-challenge.<name> → <label>.<DCVZone> , with which
	// its certificate is obtained before its traffic moves, and without
	// which a wildcard cannot get one. Empty: no delegation, and wildcards
	// verify only without a CertIssuer.
	DCVZone string

	// ProbePort is the port the HTTP ownership check through a proxy
	// connects to: 80 by default, where the proxy forwards plain HTTP.
	ProbePort int

	// ProbePrivate lets the HTTP ownership check connect to addresses
	// that are not public (loopback, private ranges). Tests set it; a
	// platform should not, so a customer's record cannot aim the check at
	// its own network.
	ProbePrivate bool

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
	dcvZone  string
	platform []string
	edge     map[netip.Addr]bool

	routeMu sync.Mutex // serialises reloads and local patches of routes
	// plans holds, per project with a live domain, whether it is
	// suspended, as the last Refresh read it (see suspendedProjects);
	// guarded by routeMu.
	plans  map[string]bool
	routes atomic.Pointer[map[string]RouteAnswer]

	// suspended holds, per project whose plan this engine has read, why
	// its domains are suspended ("" when they are not, as the platform
	// last said): what suspension answers while the platform cannot be
	// asked, and, by a project's absence, that this engine never read
	// its plan (see knownSuspension): one short entry per project the
	// platform knows and this engine asked about. Guarded by suspendedMu.
	suspended   map[string]string
	suspendedMu sync.Mutex

	// admitted holds the issuing, active and misconfigured names, for
	// Admits and Renews;
	// reloaded and patched with routes.
	admitted atomic.Pointer[map[string]admission]
	// tokens holds the token of every name a domain holds (any status
	// but removed and released), for ChallengeToken, which answers
	// anyone's request for any Host; reloaded with routes, and patched
	// by this engine's adds and removals.
	tokens atomic.Pointer[map[string]string]
	// edgeAddrs is what the CNAME target resolves to, when EdgeIPs is
	// empty: looked up at each Refresh and by Run, so views and checks
	// do not.
	edgeAddrs atomic.Pointer[[]netip.Addr]

	// addLocks serialise the count-then-create of Add per project, so
	// concurrent adds cannot pass the cap together.
	addLocks keylock.Locks

	follow follower // reloads asked for by Apply

	// unscheduled is set once RunDue has scheduled the drift checks of
	// domains that went active before they existed, and the looks at
	// domains failed for lack of a certificate before the loop took any.
	unscheduled atomic.Bool

	certs certCache // the certificate layer's last answers, for views

	// eventsSlow is set once a hand-off to Events was slow (see
	// slowHandOff) or ran out of time, and cleared by a quick one of
	// RunDue: meanwhile requests leave their events in their entries, for
	// RunDue, rather than wait for Events each.
	eventsSlow atomic.Bool
}

// New returns an engine. It returns an error when a required part is
// missing, CNAMETarget is not a valid name, or HandOffTimeout is negative
// or not below OutboxLease. Call Refresh (or Run) to load
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
	if cfg.CDNs == nil {
		cfg.CDNs = DefaultCDNs()
	}
	if cfg.ProbePort == 0 {
		cfg.ProbePort = 80
	}
	if cfg.RecheckActive == 0 {
		cfg.RecheckActive = DefaultRecheckActive
	}
	if cfg.DriftGrace <= 0 {
		cfg.DriftGrace = DefaultDriftGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxDomainsPerProject == 0 {
		cfg.MaxDomainsPerProject = DefaultMaxDomainsPerProject
	}
	if cfg.HandOffTimeout == 0 {
		cfg.HandOffTimeout = DefaultHandOffTimeout
	}
	if cfg.HandOffTimeout < 0 || cfg.HandOffTimeout >= OutboxLease {
		return nil, fmt.Errorf("domain: HandOffTimeout %s must be positive and below the outbox lease, %s", cfg.HandOffTimeout, OutboxLease)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	target := dnsName(cfg.CNAMETarget)
	if !strings.Contains(target, ".") {
		return nil, fmt.Errorf("domain: CNAMETarget %q is not a fully qualified name", cfg.CNAMETarget)
	}
	e := &Engine{cfg: cfg, target: target, dcvZone: dnsName(cfg.DCVZone), platform: []string{target}, edge: map[netip.Addr]bool{}, suspended: map[string]string{}}
	if _, parent, ok := strings.Cut(target, "."); ok {
		// The zone the target is in is the platform's: a wildcard there
		// would serve the target itself and the platform's other names.
		// Not when that is a public suffix, which no one owns.
		if _, err := publicsuffix.EffectiveTLDPlusOne(parent); err == nil {
			e.platform = append(e.platform, parent)
		}
	}
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
	none := map[string]admission{}
	e.admitted.Store(&none)
	noTokens := map[string]string{}
	e.tokens.Store(&noTokens)
	return e, nil
}

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// dnsName lower-cases a name from DNS or configuration and drops the
// trailing dot, so names compare equal however they were written.
func dnsName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// owned returns the project's entry for name, or not_found; a name held by
// another project is not_found too, so a project cannot probe others.
func (e *Engine) owned(ctx context.Context, projectID, name string) (Entry, error) {
	n, err := ParseName(name)
	if err != nil {
		return Entry{}, err
	}
	got, err := e.cfg.Store.DomainByName(ctx, n.ASCII)
	if petstore.ErrorCode(err) == petstore.CodeNotFound || err == nil && got.ProjectID != projectID {
		// A released domain no longer holds its name, but its project
		// still sees it, and why, until it dismisses it.
		released, lerr := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID, Name: n.ASCII, Status: StatusReleased})
		if lerr != nil {
			return Entry{}, lerr
		}
		if len(released) > 0 {
			return released[len(released)-1], nil
		}
	}
	if err == nil && got.ProjectID != projectID {
		err = petstore.Errorf(petstore.CodeNotFound, "domain %s not found", n.Unicode)
	}
	return got, err
}

func isConflict(err error) bool { return petstore.ErrorCode(err) == petstore.CodeConflict }

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

// List returns the project's domains (removed ones excluded), by name.
func (e *Engine) List(ctx context.Context, projectID string) ([]Domain, error) {
	entries, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID})
	if err != nil {
		return nil, err
	}
	// Looked up once for the whole list, not once per domain.
	suspended, known := e.knownSuspension(ctx, projectID)
	edge := e.edgeList(ctx)
	out := make([]Domain, 0, len(entries))
	for _, en := range entries {
		out = append(out, e.viewAs(ctx, en, suspended, known, edge))
	}
	return out, nil
}
