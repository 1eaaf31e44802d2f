package customdomain

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/petstorekit/petstore"
)

// Add attaches name (Unicode or ASCII form) to the project and returns it
// with the DNS records to create. created is false when the project already
// had it, in which case the existing domain is returned unchanged.
//
// The records always include the ownership TXT record with the domain's
// token (one per project and name), which verifies a proxied or flattened
// record. When another project held the name last, or the name lies under
// a wildcard another project holds or held last, Verify requires it
// besides the CNAME (or ALIAS): no domain takeover through a CNAME the
// customer left behind. A wildcard (*.shop.example.com) may be added; see
// KindWildcard. The project's own released entry of the name is
// dismissed. A name another project holds but never verified (pending or
// failed) may be claimed: the conflict names a TXT record, and once it is
// published, adding the name again removes the other project's entry and
// makes that record this one's required proof.
//
// Returns invalid_request for an invalid name (ParseNewName: also a
// special-use TLD, mixed scripts or a confusable label), one of the
// platform's own, a wildcard when there is a CertIssuer but no DCVZone,
// or when the project holds MaxDomainsPerProject domains;
// not_found for an unknown project, plan_required below Pro,
// deploy_required before a successful deploy, conflict when another
// project holds the name (unclaimed), and unavailable when a claim's
// record could not be looked up.
func (e *Engine) Add(ctx context.Context, projectID, name string) (d Domain, created bool, err error) {
	n, err := ParseNewName(name)
	if err != nil {
		return Domain{}, false, err
	}
	for _, p := range e.platform {
		// A platform wildcard host (*.apps.example.com) is every name below
		// its base; a wildcard one label above a platform name
		// (*.example.com over api.example.com) has a certificate valid for
		// it, which would answer that name's handshakes.
		base, wild := strings.CutPrefix(p, "*.")
		above, _ := wildcardParent(p)
		if isUnder(n.ASCII, p) || wild && isUnder(n.ASCII, base) && n.ASCII != base || n.ASCII == above {
			return Domain{}, false, invalidName("%s belongs to the platform itself and cannot be added as a custom domain", n.Unicode)
		}
	}
	if n.Kind == KindWildcard && e.cfg.CertIssuer != nil && e.dcvZone == "" {
		// Its certificate can be obtained only by DNS-01 through a DCV
		// delegation, which needs the platform's DCV zone.
		return Domain{}, false, invalidName("%s is a wildcard, and this platform cannot obtain wildcard certificates: it has no DCV zone", n.Unicode)
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
	defer e.addLocks.Lock(projectID)()
	claimed := "" // the token of a claim proven on another project's unverified hold
	if existing, ok, err := e.existing(ctx, projectID, n); ok || err != nil {
		if petstore.ErrorCode(err) != petstore.CodeConflict {
			return existing, false, err
		}
		if claimed, err = e.provenClaim(ctx, projectID, n, err); err != nil {
			return Domain{}, false, err
		}
	}
	// One round hands over the events of the released entries, the
	// claimed one and the new one: a hung Events holds the add up once.
	hand := &round{}
	// The project's own released entry of the name gives way to the new one.
	released, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: projectID, Name: n.ASCII, Status: StatusReleased})
	if err != nil {
		return Domain{}, false, err
	}
	for _, r := range released {
		// Read again on each try: another engine's RunDue may write it
		// meanwhile, retrying the removal of its certificate or the
		// deletion of its DNS records.
		read := func() (Entry, error) {
			cur, ok, err := e.freedEntry(ctx, r)
			if err == nil && !ok {
				err = petstore.Errorf(petstore.CodeNotFound, "domain %s not found", r.Name)
			}
			return cur, err
		}
		if _, err := e.change(ctx, hand, 3, read, Removed{}); err != nil && !isConflict(err) && petstore.ErrorCode(err) != petstore.CodeNotFound {
			return Domain{}, false, err
		}
	}
	if err := e.checkDomainCap(ctx, projectID); err != nil {
		return Domain{}, false, err
	}
	token, proof := claimed, claimed // a claim's record, once published, stays the proof
	if claimed != "" {
		// Only now, when nothing else can refuse the add.
		if err := e.takeOver(ctx, hand, n); err != nil {
			return Domain{}, false, err
		}
	} else if token, proof, err = e.ownershipToken(ctx, projectID, n); err != nil {
		return Domain{}, false, err
	}
	now := e.now()
	createdAt, err := e.createdAt(ctx, n.ASCII, now)
	if err != nil {
		return Domain{}, false, err
	}
	entry := Entry{
		Token:          token,
		OwnershipToken: proof,
		ID:             "dom_" + uuid.Must(uuid.NewV7()).String(),
		ProjectID:      projectID,
		Name:           n.ASCII,
		Status:         StatusPending,
		Findings:       []Finding{},
		Observed:       Observed{Addresses: []string{}},
		PendingSince:   now,
		NextCheckAt:    now.Add(time.Minute),
		History:        []Transition{{Status: StatusPending, At: now}},
		CreatedAt:      createdAt,
		UpdatedAt:      now,
	}
	added := []Effect{{Kind: Emit, Event: EventAdded}}
	e.record(&entry, added, now, e.eventDomainNow(ctx, entry, added))
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
	// Its challenge answers at once, here, and in the other processes
	// once they reload.
	e.routeMu.Lock()
	e.setToken(stored.Name, stored.Token)
	e.routeMu.Unlock()
	e.publish(ctx, stored.Name)
	e.perform(ctx, hand, stored, added)
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
	held = slices.DeleteFunc(held, func(en Entry) bool { return en.Status.FreesName() })
	if len(held) >= limit {
		return petstore.Errorf(petstore.CodeInvalidRequest,
			"this project already has %d custom domains, the most it may have; remove one before adding another", len(held))
	}
	return nil
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

// Verify checks the domain's DNS now (the dashboard's Verify and
// Re-verify) and advances it (see Step): a pending or failed domain whose
// records are right is verified, then issuing (or active without a
// CertIssuer); an issuing domain gets a new certificate attempt; a failed
// domain whose records are still wrong, or could not be looked up, goes
// back to pending for a new 48-hour window; a misconfigured domain whose
// record is back is active again; a pending domain whose DCV delegation
// exists gets its certificate before its traffic moves. Otherwise a lookup
// failure changes nothing but the findings. Returns the domain as it is afterwards, or invalid_request /
// not_found, and plan_required while the project is below Pro.
func (e *Engine) Verify(ctx context.Context, projectID, name string) (Domain, error) {
	entry, err := e.owned(ctx, projectID, name)
	if err != nil {
		return Domain{}, err
	}
	if err := e.requirePlan(ctx, projectID); err != nil {
		return Domain{}, err
	}
	now := e.now()
	ev := e.gather(ctx, entry, true)
	r := &round{}
	stored, err := e.change(ctx, r, 3, func() (Entry, error) { return e.owned(ctx, projectID, name) }, ev)
	if err != nil {
		return Domain{}, err
	}
	stored = e.settle(ctx, r, stored)
	d := e.view(ctx, stored)
	d.Diagnosis = e.diagnosis(ctx, d, ev.DNS.Observed, ev.DNS.Findings, now)
	return d, nil
}

// Remove detaches the domain (see Step): the routing answer for it is gone
// before Remove returns, redirects that mention it are dropped, the
// records ConfigureDNS wrote at the project's DNS provider are deleted,
// the CertIssuer removes its certificate, the history is kept and the name
// is free for any project. A released domain is dismissed from the list.
// Returns invalid_request / not_found. Once the removal is stored it
// stands: a certificate that cannot be removed now, or a record
// ConfigureDNS wrote that cannot be deleted now, is logged and retried by
// any engine's RunDue on the store (see retryCleanup), and Remove
// returns nil.
func (e *Engine) Remove(ctx context.Context, projectID, name string) error {
	_, err := e.change(ctx, &round{}, 3, func() (Entry, error) { return e.owned(ctx, projectID, name) }, Removed{})
	return err
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
