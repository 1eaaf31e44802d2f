package customdomain

import (
	"context"
	"time"

	"github.com/petstorekit/petstore"
)

// StatusSuspended is what Get, List, Find and Diagnose show, instead of
// the stored status, for a domain of a project below the Pro plan. It is
// never stored: it is derived from the project's plan (EngineConfig.
// Projects) each time the engine shows or routes a domain, so a plan
// change takes effect on every process at its next periodic routing
// refresh (Refresh, or Run's every RefreshEvery; the reloads a change
// makes keep the plans that one read, but for the changed domain's
// project on the engine that changed it) and an
// upgrade resumes the domains without a new verification. Domain.ResumesAs
// tells the stored status a suspended domain returns to.
//
// While suspended, a domain is not routed (the edge answers 404 for it),
// Verify, SetConfig and ConfigureDNS answer plan_required, and the
// background loop leaves it as it is (a pending domain does not go
// active, and the time does not count against its propagation window:
// Entry.WindowPausedAt), except a misconfigured domain, which is still checked: it is
// active again if its record comes back, and released when the grace
// period ends, as its reason says. CertificateChanged leaves it as it is
// too, unless it is live (a renewal is told as on Pro). Remove still works. Its certificate is kept, and still renewed
// (Admits stays true), so that resuming serves HTTPS at once.
const StatusSuspended Status = "suspended"

// ActionUpgradePlan is the next action of a suspended domain.
const ActionUpgradePlan Action = "upgrade_plan"

// suspendedRecheck is how often the background loop looks again at a
// pending or issuing domain (or one failed for lack of a certificate) of
// a suspended project, or of one whose plan
// it cannot read and never read (see knownSuspension): after an upgrade,
// or once the plan lookup answers, its checks resume within this time
// (Verify resumes them at once).
const suspendedRecheck = time.Minute

// suspension returns why projectID's domains are suspended, or "" when
// they are not: knownSuspension's reason, for the routing table and the
// views events carry, which show a domain of a project whose plan this
// engine never read as not suspended.
func (e *Engine) suspension(ctx context.Context, projectID string) string {
	reason, _ := e.knownSuspension(ctx, projectID)
	return reason
}

// knownSuspension returns why projectID's domains are suspended, or ""
// when they are not, and whether this engine knows the project's plan. It
// is the one rule for what a failed plan lookup means, for the background
// checks, the views and the routing table alike: when the platform cannot
// say now (an error other than not found), the project keeps what the
// platform last said of it to this engine, so that an outage neither
// brings back a suspended project's domains nor stops a paying one's. A
// project the platform does not know is not suspended.
//
// A project whose plan this engine never read (it started during the
// outage) is not suspended either, but known is false: the views and the
// routing table show and serve its domains as on Pro (suspension), so
// that a restart during an outage never takes a paying customer's live
// domains down, while the background checks do not advance its pending
// and issuing domains on that guess, which could serve a project below
// Pro: they wait as a suspended project's do, until the lookup answers.
// Its live domains keep their usual checks.
func (e *Engine) knownSuspension(ctx context.Context, projectID string) (reason string, known bool) {
	p, err := e.cfg.Projects.Project(ctx, projectID)
	if err != nil && petstore.ErrorCode(err) != petstore.CodeNotFound {
		e.cfg.Logger.Warn("project plan unknown; its domains keep the plan last read", "project", projectID, "err", err)
		e.suspendedMu.Lock()
		defer e.suspendedMu.Unlock()
		reason, known = e.suspended[projectID]
		return reason, known
	}
	e.suspendedMu.Lock()
	defer e.suspendedMu.Unlock()
	if err != nil { // not found: nothing to remember of it
		delete(e.suspended, projectID)
		return "", true
	}
	if !p.Plan.AtLeast(petstore.PlanPro) {
		reason = suspendedReason(p.Plan)
	}
	e.suspended[projectID] = reason
	return reason, true
}

// held reports whether entry's project's plan keeps it from moving on:
// the project is suspended, or its plan was never read (knownSuspension)
// and entry is not live. The background loop steps such a domain with
// PlanChanged{Suspended: true} instead of checking it, and
// CertificateChanged leaves one that is not live as it is, so that
// neither makes it active before the project is back on Pro.
func (e *Engine) held(ctx context.Context, entry Entry) bool {
	suspended, known := e.knownSuspension(ctx, entry.ProjectID)
	switch {
	case entry.Status != StatusMisconfigured && suspended != "":
		// Nothing moves on until the project upgrades, but a misconfigured
		// domain's grace runs out as its reason says: the name is released
		// for whoever owns it now.
		return true
	case !known && !entry.Status.live():
		// The project may be below Pro: a pending or issuing domain does
		// not go live on a guess, but waits until the lookup answers.
		return true
	}
	return false
}

// planUnknownFinding is the one wording of PLAN_UNKNOWN, which the views
// show of a domain that would move on but waits because this engine
// never read its project's plan and cannot read it now (held): a pending
// or issuing one, or one failed for lack of a certificate.
func planUnknownFinding(name string) Finding {
	return Finding{
		Code: FindingPlanUnknown,
		Message: "The platform cannot say right now which plan this project is on, and custom domains need the Pro plan or above: " +
			"until it can, " + name + " is not checked and does not move on, and Verify answers an error.",
		Fix: "Nothing to do: the platform keeps asking, and the domain's checks resume within a minute once the plan can be read.",
	}
}

func suspendedReason(p petstore.Plan) string {
	return "custom domains need the Pro plan or above and this project is on the " + planName(p) +
		" plan; upgrade to Pro to serve the domain again (its DNS records need not change)"
}

// requirePlan returns plan_required when projectID is below Pro, for the
// operations a suspended domain refuses.
func (e *Engine) requirePlan(ctx context.Context, projectID string) error {
	p, err := e.cfg.Projects.Project(ctx, projectID)
	if err != nil {
		return err
	}
	if !p.Plan.AtLeast(petstore.PlanPro) {
		return petstore.Errorf(petstore.CodePlanRequired,
			"custom domains need the Pro plan or above; this project is on the %s plan, so its domains are suspended until it upgrades", planName(p.Plan))
	}
	return nil
}

// suspend marks a view as suspended, keeping the stored status in
// ResumesAs. A removed or released domain is not: an upgrade would not
// serve it.
func suspend(d *Domain, reason string) {
	if reason == "" || d.Status.FreesName() {
		return
	}
	d.ResumesAs, d.Status, d.Reason = d.Status, StatusSuspended, reason
}

// suspendedProjects returns, of the given projects, those whose domains
// are suspended. With fresh, it asks the platform once per project, and
// keeps the answers in e.plans; otherwise it asks only about again and the
// projects e.plans does not know, so that a reload for a change (a removal, here
// or through the feed) does not wait for the platform once per project
// with a live domain. A project whose plan cannot be read now keeps the
// answer last read (see suspension). The caller holds routeMu.
func (e *Engine) suspendedProjects(ctx context.Context, ids map[string]bool, fresh bool, again string) map[string]bool {
	if fresh || e.plans == nil {
		e.plans = map[string]bool{}
	}
	out := map[string]bool{}
	for id := range ids {
		suspended, known := e.plans[id]
		if !known || id == again {
			suspended = e.suspension(ctx, id) != ""
			e.plans[id] = suspended
		}
		if suspended {
			out[id] = true
		}
	}
	return out
}
