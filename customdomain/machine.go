package customdomain

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file is the whole lifecycle of a domain: Step, a pure function of
// (entry, event, now, policy) → (entry, effects). The engine gathers what
// an event needs (a DNS check, the certificate's status) before it writes,
// applies Step inside its one optimistic write loop (change), and runs the
// effects once the write won (perform), so a lost write has none.

// Event is something that happened to a domain: Checked, CertReported,
// Removed or PlanChanged.
type Event interface{ isEvent() }

// Checked is a DNS check of the domain: by Verify (Manual) or by the
// background loop. Cert is the certificate's status read with it (CertNone
// without a CertIssuer).
type Checked struct {
	DNS    CheckResult
	Cert   CertStatus
	Manual bool
}

// CertReported is the certificate layer's answer about the domain's
// certificate, read when it reported a change (Engine.CertificateChanged)
// or when the background loop asked.
type CertReported struct{ Cert CertStatus }

// Removed is the customer removing the domain.
type Removed struct{}

// PlanChanged is the project's plan as the background loop found it. A
// suspended project's domains wait (see StatusSuspended): nothing moves on
// until it upgrades. The loop also gives a pending or issuing domain
// (or one failed for lack of a certificate, see checked)
// PlanChanged{Suspended: true} while its project's plan cannot be read and
// never was (see Engine.held): it waits as a suspended project's does.
type PlanChanged struct{ Suspended bool }

func (Checked) isEvent()      {}
func (CertReported) isEvent() {}
func (Removed) isEvent()      {}
func (PlanChanged) isEvent()  {}

// CheckResult is the outcome of one DNS check of a name.
type CheckResult struct {
	OK           bool      // the routing record (and any required proof) is right
	LookupFailed bool      // DNS could not be asked: never a verdict
	Observed     Observed  // what DNS showed
	Findings     []Finding // never nil
	// Delegated is true when the DCV delegation CNAME
	// (_acme-challenge.<name>) points at the name's label in the DCV
	// zone, so a certificate can be obtained by DNS-01 before the routing
	// record is right.
	Delegated bool
}

// Policy is what Step needs from the engine's configuration.
type Policy struct {
	Window  time.Duration // how long a pending domain is re-checked before it fails
	Issuer  bool          // a CertIssuer is configured
	Recheck time.Duration // how often a live domain's record is checked again; 0: never (with Issuer, an active one's certificate is still looked at hourly)
	Grace   time.Duration // how long a misconfigured domain is still served
}

// EffectKind is one kind of thing Step asks the engine to do once the
// entry is written.
type EffectKind uint8

// Effects, in the order the engine runs them.
const (
	Unroute        EffectKind = iota + 1 // stop serving the name now, drop redirects that mention it
	Reroute                              // the routing table changed: reload it and tell the other processes
	RequestCert                          // ask the CertIssuer for the certificate
	RemoveCert                           // the CertIssuer removes the certificate
	UnconfigureDNS                       // delete the records ConfigureDNS wrote
	Emit                                 // store the event (Effect.Event) with the change, and tell Events
)

// String returns the effect's name, as written above.
func (k EffectKind) String() string {
	names := [...]string{"", "Unroute", "Reroute", "RequestCert", "RemoveCert", "UnconfigureDNS", "Emit"}
	if int(k) < len(names) && k > 0 {
		return names[k]
	}
	return fmt.Sprintf("EffectKind(%d)", k)
}

// Effect is one effect of a Step; Event is set for Emit.
type Effect struct {
	Kind  EffectKind
	Event string
}

// Event types given to Events (PendingEvent.Type).
const (
	EventAdded         = "domain.added"
	EventVerified      = "domain.verified"
	EventActive        = "domain.active"
	EventMisconfigured = "domain.misconfigured"
	EventCertIssued    = "domain.certificate.issued"
	EventCertFailed    = "domain.certificate.failed"
	EventRemoved       = "domain.removed"
)

// Step applies ev to e at now. It does no I/O; the effects are for the
// caller to run, in their order, after the entry is written. An entry
// returned equal to e.Canonical() needs no write.
func Step(e Entry, ev Event, now time.Time, p Policy) (Entry, []Effect) {
	m := machine{e: e.Canonical(), was: e, now: now, p: p}
	m.e.History = append([]Transition{}, m.e.History...)
	switch ev := ev.(type) {
	case Checked:
		m.checked(ev)
	case CertReported:
		m.certReported(ev.Cert)
	case Removed:
		m.removed()
	case PlanChanged:
		switch {
		case !ev.Suspended || m.e.Status.FreesName():
		case m.e.Status.live():
			// It waits as it is: looked at again at its usual drift
			// interval, not rewritten every minute.
			m.nextLive()
		default:
			m.e.NextCheckAt = now.Add(suspendedRecheck)
			if m.e.Status == StatusPending && m.e.WindowPausedAt.IsZero() {
				// Not checked until the project is back on Pro (or its
				// plan is read): its propagation window waits from its
				// last check.
				m.e.WindowPausedAt = m.e.PendingSince
				if m.e.CheckedAt.After(m.e.WindowPausedAt) {
					m.e.WindowPausedAt = m.e.CheckedAt
				}
			}
		}
	}
	return m.e, m.fx
}

type machine struct {
	e   Entry
	was Entry // the entry before the event
	now time.Time
	p   Policy
	fx  []Effect
}

func (m *machine) do(k EffectKind)      { m.fx = append(m.fx, Effect{Kind: k}) }
func (m *machine) emit(typ string)      { m.fx = append(m.fx, Effect{Kind: Emit, Event: typ}) }
func (m *machine) next(d time.Duration) { m.e.NextCheckAt = m.now.Add(d) }

// to records a status change in the entry and its history, which keeps
// the newest MaxHistory.
func (m *machine) to(s Status, reason string) {
	if m.e.Status == s && m.e.Reason == reason {
		return
	}
	m.e.Status, m.e.Reason = s, reason
	m.e.History = newest(append(m.e.History, Transition{Status: s, At: m.now, Reason: reason}), MaxHistory)
	m.e.UpdatedAt = m.now
}

func (m *machine) checked(c Checked) {
	if m.e.Status.FreesName() {
		return
	}
	if !m.e.WindowPausedAt.IsZero() {
		// Back on Pro: the time suspended does not count against the
		// propagation window.
		if m.e.Status == StatusPending {
			m.e.PendingSince = m.e.PendingSince.Add(m.now.Sub(m.e.WindowPausedAt))
		}
		m.e.WindowPausedAt = time.Time{}
	}
	m.e.Attempts++
	m.e.CheckedAt, m.e.UpdatedAt = m.now, m.now
	m.e.Findings = c.DNS.Findings
	if !c.DNS.LookupFailed {
		m.e.Observed = c.DNS.Observed
	}
	if m.p.Issuer {
		cert := c.Cert
		if !m.ownsCert() && !c.DNS.OK && !c.DNS.Delegated {
			// A domain gets a certificate before it verifies only through
			// the DCV delegation; without one, this is the name's last
			// holder's, its removal pending (Entry.CertRemovalPending):
			// not this domain's to announce or answer handshakes with.
			// Once the domain verifies, it may use it.
			cert.State = ""
		}
		m.noteCert(cert)
	}
	switch s := m.e.Status; {
	case s.live():
		m.recheckLive(c.DNS)
		if c.Manual && c.DNS.OK && m.p.Issuer && (c.Cert.State == CertFailed || expiresSoon(c.Cert, m.now)) {
			// Re-verify of a live domain whose certificate failed (it
			// expired unrenewed) or is about to (CERT_EXPIRING): a new
			// attempt now, as both findings' fixes say.
			m.do(RequestCert)
		}
	case s == StatusFailed && !c.Manual:
		// Only Re-verify moves a failed domain on, but for one that failed
		// for lack of a certificate, which the loop looks at every
		// certRecheck (daily once it failed a day ago, as one abandoned
		// is looked at for as long as it exists): once one is there
		// (another process obtained it, or its report came while the
		// project was held) and its records still verify, it goes live.
		switch {
		case !m.failedIssuing():
			m.e.NextCheckAt = time.Time{} // nothing to look for
		case c.DNS.OK && c.Cert.State == CertIssued:
			m.activate()
		case m.now.Sub(m.e.History[len(m.e.History)-1].At) >= 24*time.Hour:
			m.next(24 * time.Hour)
		default:
			m.next(certRecheck)
		}
	case c.DNS.OK && (s == StatusPending || s == StatusFailed || s == StatusIssuing && c.Manual):
		m.verified(c)
	case c.DNS.OK && s == StatusIssuing:
		// The background loop asks the certificate layer about issuing
		// domains (CertReported); a check changes nothing more.
	case s == StatusFailed && c.Manual:
		m.e.PendingSince = m.now
		m.to(StatusPending, "")
		m.next(time.Minute)
	case s == StatusPending:
		if c.DNS.Delegated && m.p.Issuer && (c.Cert.State == CertNone || c.Manual && c.Cert.State == CertFailed) {
			// Certificate before the cutover: DNS-01 through the DCV
			// delegation works while the routing record still points
			// elsewhere. Recorded, so that the certificate layer's
			// answer is taken as this domain's (ownsCert).
			m.do(RequestCert)
			m.e.Cert = CertIssuing
		}
		m.schedule(c.DNS)
	}
}

// verified is DNS verifying: the milestone, then issuing or active.
func (m *machine) verified(c Checked) {
	m.e.VerifiedAt = m.now
	if m.e.Status != StatusIssuing {
		m.to(StatusVerified, "")
		m.emit(EventVerified)
	}
	if !m.p.Issuer || c.Cert.State == CertIssued {
		m.activate()
		return
	}
	if m.e.Status != StatusIssuing {
		m.to(StatusIssuing, "")
		m.do(Reroute) // the certificate layer admits an issuing name's handshakes
	}
	m.next(time.Minute)
	if c.Cert.State != CertIssuing || c.Manual {
		m.do(RequestCert)
	}
}

// certRecheck is how often, with drift checks off (Policy.Recheck 0), the
// background loop looks at an active domain's certificate alone, so that
// a renewal that keeps failing is still told before the certificate
// expires (CertExpiringFinding); and how often it looks at a domain
// failed for lack of a certificate, which goes live once one is there.
const certRecheck = time.Hour

// nextLive schedules a live domain's next background look: its drift
// check, or, with drift checks off and a certificate layer, a look at its
// certificate alone (certRecheck).
func (m *machine) nextLive() {
	m.e.NextCheckAt = time.Time{}
	switch {
	case m.p.Recheck > 0:
		m.next(m.p.Recheck)
	case m.p.Issuer:
		m.next(certRecheck)
	}
}

func (m *machine) activate() {
	m.to(StatusActive, "")
	m.e.DriftedAt = time.Time{}
	m.nextLive()
	m.do(Reroute)
	m.emit(EventActive)
}

// recheckLive is the drift check of a served domain: a record that moved
// away makes it misconfigured (still served, not renewed); one that
// stays away past the grace period releases it; one that comes back
// makes it active again.
func (m *machine) recheckLive(r CheckResult) {
	switch {
	case r.OK && m.e.Status == StatusMisconfigured:
		m.activate()
	case r.OK:
		m.nextLive()
	case r.LookupFailed && m.e.Status == StatusActive:
		m.next(m.lookupRetry()) // "could not check" is never drift
	case m.e.Status == StatusActive:
		m.e.DriftedAt = m.now
		m.to(StatusMisconfigured, driftReason(r, m.p.Grace))
		m.do(Reroute) // certificates of misconfigured names are not renewed
		m.emit(EventMisconfigured)
		m.scheduleDrift()
	case !r.LookupFailed && !m.now.Before(m.e.DriftedAt.Add(m.p.Grace)):
		what := "its DNS record did not point at the platform"
		if delegationOnly(r) {
			what = "its DNS records were not right"
		}
		reason := fmt.Sprintf("released: %s for %s", what, words(m.p.Grace))
		if len(r.Findings) > 0 {
			reason += " (" + r.Findings[0].Message + ")"
		}
		reason += "; add it again to serve it"
		m.to(StatusReleased, reason)
		m.e.NextCheckAt = time.Time{}
		m.do(Unroute)
		m.removeCert()
		m.unconfigureDNS()
		m.emit(EventRemoved)
	default:
		if !r.LookupFailed { // the reason says what the record points to now
			m.e.Reason = driftReason(r, m.p.Grace)
		}
		m.scheduleDrift()
	}
}

// lookupRetry is when a live domain whose check could not ask DNS is
// checked again: in a minute, then, while its checks keep failing so
// (its nameservers are gone, say), twice as long as the last wait each
// time, up to the usual re-check interval, so that such domains do not
// cost each background round a lookup's timeout every minute for ever.
func (m *machine) lookupRetry() time.Duration {
	d := time.Minute
	if slices.ContainsFunc(m.was.Findings, func(f Finding) bool { return f.Code == FindingLookupFailed }) {
		d = max(d, 2*m.was.NextCheckAt.Sub(m.was.CheckedAt))
	}
	limit := m.p.Recheck
	if limit <= 0 { // no periodic re-check: as a long-pending domain
		limit = recheckInterval(m.p.Window)
	}
	return min(d, limit)
}

func (m *machine) scheduleDrift() {
	deadline := m.e.DriftedAt.Add(m.p.Grace)
	next := m.now.Add(recheckInterval(m.now.Sub(m.e.DriftedAt)))
	if next.After(deadline) && m.now.Before(deadline) {
		next = deadline
	}
	m.e.NextCheckAt = next
}

// delegationOnly reports whether what a failed check found is only the
// missing DCV delegation of a wildcard: its routing record is right.
func delegationOnly(r CheckResult) bool {
	return len(r.Findings) > 0 && r.Findings[0].Code == FindingDCVMissing
}

func driftReason(r CheckResult, grace time.Duration) string {
	s := "the DNS record no longer points at the platform"
	switch {
	case delegationOnly(r):
		// The routing record still points here: saying where it points
		// would name the platform's own target as the problem.
		s = r.Findings[0].Message
	case r.Observed.CNAME != "":
		s += ": it points to " + r.Observed.CNAME
	case len(r.Observed.Addresses) > 0:
		s += ": it resolves to " + strings.Join(r.Observed.Addresses, ", ")
	default:
		s += ": it has no records"
	}
	return s + fmt.Sprintf("; the domain is still served, without certificate renewal, for %s, then released unless the record comes back", words(grace))
}

// schedule sets when a pending entry is checked next: every minute in the
// first hour, then less often, and fails it once the window has passed.
func (m *machine) schedule(r CheckResult) {
	deadline := m.e.PendingSince.Add(m.p.Window)
	if !m.now.Before(deadline) && r.LookupFailed {
		// "Could not check" is never a verdict: keep trying.
		m.next(recheckInterval(m.now.Sub(m.e.PendingSince)))
		return
	}
	if !m.now.Before(deadline) {
		reason := "the DNS records were not right within " + words(m.p.Window)
		if len(r.Findings) > 0 {
			reason += ": " + r.Findings[0].Message
		}
		m.to(StatusFailed, reason)
		m.e.NextCheckAt = time.Time{}
		return
	}
	next := m.now.Add(recheckInterval(m.now.Sub(m.e.PendingSince)))
	if next.After(deadline) {
		next = deadline
	}
	m.e.NextCheckAt = next
}

// noteCert records the certificate state and tells a change once. An
// issued certificate about to expire (CertExpiring), which renewing has
// not replaced, is told as a failure before browsers refuse it, and its
// renewal as issued again.
func (m *machine) noteCert(c CertStatus) {
	state := c.State
	if expiresSoon(c, m.now) {
		state = CertExpiring
	}
	if state == m.e.Cert || state == "" {
		return
	}
	was := m.e.Cert
	m.e.Cert = state
	switch state {
	case CertIssued, CertExpiring:
		if state == CertIssued {
			m.emit(EventCertIssued)
		} else {
			m.emit(EventCertFailed)
		}
		if m.e.Status == StatusPending && was != CertIssued && was != CertExpiring {
			// Obtained before the cutover (DCV): handshakes for the name
			// are answered from now on, though it is not routed yet.
			m.do(Reroute)
		}
	case CertFailed:
		m.emit(EventCertFailed)
	}
}

// certReported moves an issuing domain on by its certificate: an issuer
// that knows nothing of the name (it restarted, or it is another process
// and no certificate is in shared storage) is asked again, so the domain
// cannot stay issuing forever.
func (m *machine) certReported(c CertStatus) {
	if m.e.Status.FreesName() || !m.p.Issuer {
		if m.e.Status == StatusIssuing { // the issuer went away: serve plain HTTP
			m.activate()
		}
		return
	}
	if !m.ownsCert() {
		// The name's last holder's certificate (an order it started
		// finishing late, say), not this unverified domain's.
		return
	}
	m.noteCert(c)
	if m.e.Status == StatusActive && m.p.Recheck <= 0 {
		m.nextLive() // the look at its certificate of certRecheck
	}
	if m.e.Status == StatusFailed && c.State == CertIssued && m.failedIssuing() {
		// Its DNS verified and only the certificate was missing: another
		// process sharing the storage obtained it (the customer fixed CAA
		// and Re-verify reached that process), while this one's refusal
		// had failed the domain. The loop checks its records within a
		// minute, and makes it active if they still verify (checked).
		m.next(time.Minute)
		return
	}
	if m.e.Status != StatusIssuing {
		return
	}
	m.next(time.Minute)
	switch c.State {
	case CertNone:
		m.do(RequestCert)
	case CertIssued:
		m.activate()
	case CertFailed:
		reason := c.Reason
		if reason == "" {
			reason = "the certificate authority refused the certificate"
		}
		m.to(StatusFailed, reason)
		m.next(certRecheck) // see checked: a certificate may come after all
	}
}

// ownsCert reports whether what the certificate layer says of the name
// is this domain's: it verified, or it asked for a certificate through
// the DCV delegation before verifying (Cert records the request). A name
// removed and added again keeps its last holder's certificate for a
// while, which is not the new domain's until it verifies.
func (m *machine) ownsCert() bool {
	return !m.e.VerifiedAt.IsZero() || m.e.Status == StatusIssuing || m.e.Status.live() ||
		m.e.Cert != "" && m.e.Cert != CertNone
}

// failedIssuing reports whether the entry failed while issuing: its DNS
// verified, and its certificate was refused.
func (m *machine) failedIssuing() bool { return failedIssuing(m.e.History) }

// failedIssuing reports whether history ends in a failure while issuing.
func failedIssuing(h []Transition) bool {
	return len(h) >= 2 && h[len(h)-1].Status == StatusFailed && h[len(h)-2].Status == StatusIssuing
}

func (m *machine) removed() {
	if m.e.Status == StatusRemoved {
		return
	}
	wasReleased := m.e.Status == StatusReleased
	m.to(StatusRemoved, "")
	m.e.UpdatedAt = m.now
	if wasReleased {
		// Released already let go of everything; a removal of its
		// certificate or a deletion of its DNS records still pending
		// (NextCheckAt) goes on.
		return
	}
	m.e.NextCheckAt = time.Time{}
	m.do(Unroute)
	m.removeCert()
	m.unconfigureDNS()
	m.emit(EventRemoved)
}

// cleanupLease is how long the engine that removed or released a domain
// has to remove its certificate and delete its records at the DNS
// provider, and to record that it did, before any engine's RunDue tries
// instead.
const cleanupLease = time.Minute

// removeCert asks the CertIssuer, when there is one, to remove the
// name's certificate, and marks the removal pending in the same write as
// the removal or release (CertRemovalPending, and NextCheckAt, which on a
// removed or released entry is when it is tried again). If the removal
// fails, or the process ends before it records success, the store still
// says the certificate is there, and any replica's RunDue finds it among
// its due domains.
func (m *machine) removeCert() {
	if !m.p.Issuer {
		return
	}
	m.e.CertRemovalPending = true
	m.e.NextCheckAt = m.now.Add(cleanupLease)
	m.do(RemoveCert)
}

// unconfigureDNS asks for the deletion of the records ConfigureDNS wrote,
// and marks it pending in the same write as the removal, as removeCert
// does: the records stay in DNSRecords until they are deleted.
func (m *machine) unconfigureDNS() {
	if len(m.e.DNSRecords) > 0 {
		m.e.NextCheckAt = m.now.Add(cleanupLease)
	}
	m.do(UnconfigureDNS)
}

// words says a duration the way people do: "48 hours", "30 minutes",
// else Go's form.
func words(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d == time.Minute:
		return "1 minute"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}

// RecheckInterval is how long the background loop waits before checking a
// domain again, given how long it has been waiting (pending, or
// misconfigured): every minute in the first hour (most DNS changes show
// within minutes), then backing off to at most every 30 minutes.
func recheckInterval(pending time.Duration) time.Duration {
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
