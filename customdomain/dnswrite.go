package customdomain

import (
	"context"
	"slices"

	"github.com/petstorekit/petstore"
)

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
	zone, recs, err := e.providerRecords(ctx, entry)
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

// unconfigureDNS deletes the records ConfigureDNS may have written for a
// removed domain. The configurator deletes only exact matches, so records
// the customer made for other purposes stay. A failure leaves records that
// point at the platform, which no longer answers for the name: logged, not
// returned, as the removal itself is done.
func (e *Engine) unconfigureDNS(ctx context.Context, en Entry) {
	name := en.Name
	c := e.dnsOf(en.ProjectID)
	if c == nil {
		return
	}
	zone, recs, err := e.providerRecords(ctx, en)
	if err == nil {
		err = c.Unconfigure(ctx, zone, recs)
	}
	if err != nil {
		e.cfg.Logger.Warn("domain removed but its records at the DNS provider were not", "domain", name, "err", err)
	}
}
