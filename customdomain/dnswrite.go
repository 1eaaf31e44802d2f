package customdomain

import (
	"context"
	"errors"
	"slices"

	"github.com/petstorekit/petstore"
)

// ConfigureDNS writes the domain's records at the DNS provider the project
// connected (EngineConfig.DNS) and returns the conflicts it found instead
// of overwriting them. The records it creates are kept in the domain's
// Entry (DNSRecords), and Remove deletes exactly those: records that were
// there before, or that the customer made or changed, stay. Returns
// invalid_request when the project connected no DNS provider,
// invalid_request / not_found for the name, and unavailable when the
// provider could not be read or written (what it did write is kept).
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
	if err != nil && petstore.ErrorCode(err) == petstore.CodeInternal && !errors.Is(ctx.Err(), context.Canceled) {
		// The provider could not be reached, or refused: the customer can
		// only try again; the operator reads why in the log. (A request
		// canceled, its client gone, is no provider's failure.)
		e.cfg.Logger.Warn("the DNS provider could not be read or written", "domain", entry.Name, "zone", zone, "err", err)
		err = petstore.Errorf(petstore.CodeUnavailable, "the DNS of %s could not be written now; try again later", zone)
	}
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
