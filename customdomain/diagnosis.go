package customdomain

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// view turns a stored entry into what a dashboard shows, suspended when
// the project's plan is below Pro.
func (e *Engine) view(ctx context.Context, en Entry) Domain {
	suspended, known := e.knownSuspension(ctx, en.ProjectID)
	return e.viewAs(ctx, en, suspended, known, e.edgeList(ctx))
}

// viewAs is view with what is the same for many domains looked up once by
// the caller: the project's suspension reason and whether its plan is
// known (knownSuspension), and the edge's addresses. The certificate's
// status comes from what the engine last read (see certCache); render
// does the rest without I/O. A domain that would move on but is held
// because its project's plan was never read says so (PLAN_UNKNOWN).
func (e *Engine) viewAs(ctx context.Context, en Entry, suspended string, known bool, edge []netip.Addr) Domain {
	d := e.render(en, suspended, edge, e.certOf(ctx, en))
	theirs := e.diagnose(ctx, d)
	if !known && (en.Status == StatusPending || en.Status == StatusIssuing || failedIssuing(en.History)) {
		theirs = append(theirs, planUnknownFinding(d.Name))
	}
	d.Diagnosis = e.diagnosisWith(d, en.Observed, en.Findings, en.CheckedAt, theirs)
	return d
}

// render builds the view of en from what was looked up: no I/O.
func (e *Engine) render(en Entry, suspended string, edge []netip.Addr, cert CertStatus) Domain {
	n, err := ParseName(en.Name)
	if err != nil { // stored before the rules changed: show it as it is
		n = Name{ASCII: en.Name, Unicode: en.Name, Kind: KindSubdomain, Label: en.Name}
	}
	d := Domain{
		Name: n.ASCII, UnicodeName: n.Unicode, Kind: n.Kind, ProjectID: en.ProjectID,
		Status: en.Status, Reason: en.Reason, Attempts: en.Attempts,
		History: slices.Clone(en.History), CreatedAt: en.CreatedAt, VerifiedAt: en.VerifiedAt, DriftedAt: en.DriftedAt,
		Certificate: cert,
	}
	if d.History == nil {
		d.History = []Transition{}
	}
	suspend(&d, suspended)
	d.Records, d.Alternatives, d.Note = e.instructions(n, en, edge)
	if c := e.dnsOf(en.ProjectID); c != nil && en.Status != StatusRemoved {
		scope, scoped := c.(DNSScope)
		d.DNSManaged = !scoped || scope.Manages(n.ASCII)
	}
	return d
}

// diagnosis combines DNS findings with the certificate layer's and the
// Diagnosers', and decides the next action.
func (e *Engine) diagnosis(ctx context.Context, d Domain, obs Observed, dnsFindings []Finding, at time.Time) Diagnosis {
	return e.diagnosisWith(d, obs, dnsFindings, at, e.diagnose(ctx, d))
}

// diagnose asks the Diagnosers (and a CertIssuer that is one) about d.
func (e *Engine) diagnose(ctx context.Context, d Domain) []Finding {
	if d.Status.FreesName() {
		return nil
	}
	ds := e.cfg.Diagnosers
	if dg, ok := e.cfg.CertIssuer.(Diagnoser); ok {
		ds = append([]Diagnoser{dg}, ds...)
	}
	var findings []Finding
	for _, dg := range ds {
		findings = append(findings, dg.Diagnose(ctx, d)...)
	}
	return findings
}

// diagnosisWith is diagnosis with the Diagnosers' findings about d given:
// no I/O.
func (e *Engine) diagnosisWith(d Domain, obs Observed, dnsFindings []Finding, at time.Time, theirs []Finding) Diagnosis {
	findings := slices.Clone(dnsFindings)
	findings = append(findings, d.Certificate.Findings...)
	findings = append(findings, theirs...)
	// Timed from the stored VerifiedAt, so every process sharing the store
	// shows it, whatever its issuer remembers. An issuer's own finding
	// (which may carry the CA's last error) takes precedence.
	if d.Status == StatusIssuing && !d.VerifiedAt.IsZero() &&
		!e.now().Before(d.VerifiedAt.Add(CertPendingLimit)) &&
		!slices.ContainsFunc(findings, func(f Finding) bool { return f.Code == FindingCertPendingTooLong }) {
		findings = append(findings, CertPendingTooLongFinding(d.Name, CertPendingLimit, ""))
	}
	if expiresSoon(d.Certificate, e.now()) {
		findings = append(findings, CertExpiringFinding(d.Name, d.Certificate.NotAfter))
	}
	if findings == nil {
		findings = []Finding{}
	}
	if obs.Addresses == nil {
		obs.Addresses = []string{}
	}
	dnsOK := len(dnsFindings) == 0 && !at.IsZero()
	return Diagnosis{
		OK:         len(findings) == 0 && d.Status != StatusSuspended && (d.Status == StatusActive || dnsOK && !d.Status.FreesName() && d.Status != StatusMisconfigured),
		NextAction: nextAction(d.Status, findings, dnsOK),
		Observed:   obs,
		Findings:   findings,
		CheckedAt:  at,
	}
}

// nextAction decides what the customer does next.
func nextAction(s Status, findings []Finding, dnsOK bool) Action {
	switch s {
	case StatusRemoved, StatusReleased:
		return ActionNone
	case StatusMisconfigured:
		return ActionFixDNS
	case StatusSuspended:
		return ActionUpgradePlan
	}
	has := func(codes ...string) bool {
		return slices.ContainsFunc(findings, func(f Finding) bool { return slices.Contains(codes, f.Code) })
	}
	switch {
	case has(FindingConflictingRecord, FindingCNAMEMismatch, FindingApexForeignIPs, FindingOwnershipUnproven, FindingCAABlocksCA, FindingProxied, FindingDCVMissing, FindingCertExpired, FindingCertExpiring):
		return ActionFixDNS
	case has(FindingPlanUnknown): // Verify cannot read the plan either
		return ActionWait
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
