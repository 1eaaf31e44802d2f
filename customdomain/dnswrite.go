package customdomain

import (
	"context"
	"slices"
	"time"

	"github.com/petstorekit/petstore"
)

// ConfigureDNS writes the domain's records at the DNS provider the project
// connected (EngineConfig.DNS) and returns the conflicts it found instead
// of overwriting them. The records it creates are kept in the domain's
// Entry (DNSRecords), and Remove deletes exactly those: records that were
// there before, or that the customer made or changed, stay. Returns
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
	zone, recs, err := e.providerRecords(ctx, entry)
	if err != nil {
		return nil, err
	}
	created, findings, err := c.Configure(ctx, zone, recs)
	if len(created) > 0 {
		if rerr := e.rememberDNS(ctx, c, entry, zone, created); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return findings, nil
}

// rememberDNS adds the records ConfigureDNS created to the domain's stored
// entry, for Remove. When the entry cannot keep them (it was removed or
// released meanwhile, so its removal did not know them, or the store
// fails) they are deleted again at once: a record the engine does not
// know it wrote would outlive the domain.
func (e *Engine) rememberDNS(ctx context.Context, c DNSConfigurator, en Entry, zone string, created []Record) error {
	err := e.addDNSRecords(ctx, en.Name, func(cur Entry) bool { return cur.ID == en.ID }, created)
	if err == nil {
		return nil
	}
	if uerr := c.Unconfigure(ctx, zone, created); uerr != nil {
		e.cfg.Logger.Warn("records written for a domain could not be kept nor deleted", "domain", en.Name, "err", uerr)
	}
	return err
}

// addDNSRecords adds recs to the DNSRecords of the entry that holds name,
// if it is the one mine accepts: not_found when none is (the entry was
// removed or released meanwhile), conflict when it kept changing.
func (e *Engine) addDNSRecords(ctx context.Context, name string, mine func(Entry) bool, recs []Record) error {
	var err error = petstore.Errorf(petstore.CodeConflict, "the domain is changing right now; try again")
	for range 3 {
		cur, rerr := e.cfg.Store.DomainByName(ctx, name)
		if petstore.ErrorCode(rerr) == petstore.CodeNotFound || (rerr == nil && !mine(cur)) {
			return petstore.Errorf(petstore.CodeNotFound, "domain %s was removed meanwhile", name)
		}
		if rerr != nil {
			return rerr
		}
		next := cur.Canonical()
		for _, r := range recs {
			if !slices.Contains(next.DNSRecords, r) {
				next.DNSRecords = append(next.DNSRecords, r)
			}
		}
		if len(next.DNSRecords) == len(cur.DNSRecords) {
			return nil
		}
		_, werr := e.cfg.Store.UpdateDomain(ctx, next)
		if werr == nil {
			return nil
		}
		if err = werr; !isConflict(werr) {
			return err
		}
	}
	return err
}

func (e *Engine) dnsOf(projectID string) DNSConfigurator {
	if e.cfg.DNS == nil {
		return nil
	}
	return e.cfg.DNS(projectID)
}

// providerRecords returns the zone and the records ConfigureDNS writes for
// name.
func (e *Engine) providerRecords(ctx context.Context, en Entry) (string, []Record, error) {
	n, err := ParseName(en.Name)
	if err != nil {
		return "", nil, err
	}
	recs, alts, _ := e.instructions(n, en, e.edgeList(ctx))
	// Optional records are for cases a managed zone does not have (a
	// proxy in front of the name).
	recs = slices.DeleteFunc(slices.Clone(recs), func(r Record) bool { return r.Optional })
	if n.Kind == KindApex && len(alts) > 0 {
		// Few providers have ALIAS; the addresses work everywhere. The
		// other records are still needed beside them.
		recs = append(slices.Clone(alts), recs[1:]...)
	}
	return n.Registered, recs, nil
}

// unconfigureDNS deletes the records ConfigureDNS created for a domain
// just removed or released (its DNSRecords), exactly as they were written:
// a record that was there before, or that the customer made or changed,
// stays. The write that removed it also marked the deletion pending
// (NextCheckAt, a minute ahead), which this clears once it is done. A
// failure leaves records that point at the platform, which no longer
// answers for the name: not returned, as the removal itself is done, but
// retried from the store by any engine's RunDue (retryDNSCleanup), also
// when this process ends first. A name attached again already (the
// removal's earlier steps take time: the certificate's removal asks the
// CertIssuer) keeps them pending too: its new domain may rely on them,
// as ConfigureDNS leaves alone a record already right, and
// retryDNSCleanup decides who they belong to.
func (e *Engine) unconfigureDNS(ctx context.Context, en Entry) {
	if en.NextCheckAt.IsZero() {
		return
	}
	switch _, err := e.cfg.Store.DomainByName(ctx, en.Name); {
	case err == nil:
		return // attached again: retryDNSCleanup, after the lease
	case petstore.ErrorCode(err) != petstore.CodeNotFound:
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not; will retry", "domain", en.Name, "err", err)
		return
	}
	if err := e.deleteDNS(ctx, en); err != nil {
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not; will retry", "domain", en.Name, "err", err)
		return
	}
	e.dnsCleaned(ctx, en)
}

// deleteDNS deletes en's DNSRecords at its project's DNS provider. Only
// the provider's failure is returned: a project with no provider now, or
// a name that does not parse, is logged, as a retry would not change it.
func (e *Engine) deleteDNS(ctx context.Context, en Entry) error {
	c := e.dnsOf(en.ProjectID)
	if c == nil {
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not: the project has no provider now", "domain", en.Name)
		return nil
	}
	n, err := ParseName(en.Name)
	if err != nil {
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not", "domain", en.Name, "err", err)
		return nil
	}
	return c.Unconfigure(ctx, n.Registered, en.DNSRecords)
}

// retryDNSCleanup tries once more to delete the records of en, a removed
// or released entry that DueDomains returned: its NextCheckAt is when the
// deletion is due (see Entry.DNSRecords). It is tried by one engine at a
// time, less often the longer it waits, as the background checks are
// (every minute in the first hour, then up to every 30 minutes), until
// it succeeds. It first claims the attempt by moving NextCheckAt on (a
// version-checked write: of several replicas reading en, one wins, and a
// process that dies mid-way leaves it due again then), so the records are
// deleted once, not by every replica; a deletion done but not recorded,
// as the store failed or the process ended right after it, is tried
// again, and deletes only records still exactly as written.
//
// A name attached again meanwhile is not deleted from under its holder.
// The same project's new entry takes the records over (they are in the
// zone, and it uses them: its removal deletes them); its DNS provider is
// the project's, the one that would have deleted them. Another project's
// keeps them out of reach: they stay with en, to delete once the name is
// free again, as nothing else would ever delete them.
func (e *Engine) retryDNSCleanup(ctx context.Context, en Entry, now time.Time) {
	if len(en.DNSRecords) == 0 { // nothing to delete: never due again
		e.dnsCleaned(ctx, en)
		return
	}
	freed := en.UpdatedAt
	if len(en.History) > 0 {
		freed = en.History[len(en.History)-1].At
	}
	claim := en.Canonical()
	claim.NextCheckAt = now.Add(recheckInterval(now.Sub(freed)))
	claimed, err := e.cfg.Store.UpdateDomain(ctx, claim)
	if err != nil {
		if !isConflict(err) { // a conflict: another engine has it
			e.cfg.Logger.Warn("leftover DNS records of a removed domain not retried; will retry", "domain", en.Name, "err", err)
		}
		return
	}
	holder, err := e.cfg.Store.DomainByName(ctx, en.Name)
	switch {
	case err == nil && holder.ProjectID == en.ProjectID:
		mine := func(cur Entry) bool { return cur.ProjectID == en.ProjectID }
		if err := e.addDNSRecords(ctx, en.Name, mine, en.DNSRecords); err != nil {
			e.cfg.Logger.Warn("leftover DNS records not handed to the domain added again; will retry", "domain", en.Name, "err", err)
			return
		}
	case err == nil:
		return // held by another project: kept until the name is free
	case petstore.ErrorCode(err) != petstore.CodeNotFound:
		return // cannot tell now; next time
	default:
		if err := e.deleteDNS(ctx, claimed); err != nil {
			e.cfg.Logger.Warn("deleting a removed domain's records at the DNS provider failed again; will retry", "domain", en.Name, "err", err)
			return
		}
	}
	e.dnsCleaned(ctx, claimed)
}

// dnsCleaned records that en's records need no deletion any more: zero
// NextCheckAt, so that DueDomains no longer returns it. An entry changed
// meanwhile (a released one dismissed, or another engine's retry after
// the lease) is read again and cleared too. A write that fails leaves the
// deletion due, to be tried again.
func (e *Engine) dnsCleaned(ctx context.Context, en Entry) {
	for range 3 {
		en.NextCheckAt = time.Time{}
		_, err := e.cfg.Store.UpdateDomain(ctx, en)
		if err == nil {
			return
		}
		if !isConflict(err) {
			e.cfg.Logger.Warn("a removed domain's records were deleted but this was not stored; they may be deleted again", "domain", en.Name, "err", err)
			return
		}
		cur, ok, err := e.freedEntry(ctx, en)
		if err != nil || !ok || cur.NextCheckAt.IsZero() {
			return
		}
		en = cur
	}
}

// freedEntry reads en again, from the removed and released entries of its
// project and name.
func (e *Engine) freedEntry(ctx context.Context, en Entry) (Entry, bool, error) {
	for _, st := range []Status{StatusRemoved, StatusReleased} {
		freed, err := e.cfg.Store.ListDomains(ctx, DomainQuery{ProjectID: en.ProjectID, Name: en.Name, Status: st})
		if err != nil {
			return Entry{}, false, err
		}
		for _, cur := range freed {
			if cur.ID == en.ID {
				return cur, true, nil
			}
		}
	}
	return Entry{}, false, nil
}
