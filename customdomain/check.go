package customdomain

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// check reads the records at name and compares them with what the domain
// needs: a subdomain passes when its CNAME is the target (or, flattened, it
// resolves only to edge addresses); an apex passes when its A/AAAA set is
// non-empty and all edge addresses, which is what a flattened ALIAS looks
// like.
//
// A non-empty token also requires the ownership TXT record (see
// Engine.ownershipToken): the domain passes only when both are right, and
// a missing or wrong proof is an OWNERSHIP_UNPROVEN finding, a DNS problem
// like the others, not a lookup failure.
func (e *Engine) check(ctx context.Context, entry Entry) CheckResult {
	n, err := ParseName(entry.Name)
	if err != nil {
		n = Name{ASCII: entry.Name, Unicode: entry.Name, Kind: KindSubdomain, Label: entry.Name}
	}
	token := outstandingProof(entry)
	res := e.checkRouting(ctx, n, entry.Token, !entry.VerifiedAt.IsZero())
	if res.LookupFailed {
		return res
	}
	if target := e.dcvTarget(entry); target != "" {
		ok, err := e.checkDelegation(ctx, n, target)
		if err != nil {
			return e.lookupFailed(n)
		}
		res.Delegated = ok
		if n.Kind == KindWildcard && !ok && e.cfg.CertIssuer != nil {
			res.OK = false
			res.Findings = append(res.Findings, dcvMissing(n, dcvRecord(n, target)))
		}
	}
	if token == "" {
		return res
	}
	f, err := e.checkOwnership(ctx, n, token)
	if err != nil {
		return e.lookupFailed(n)
	}
	if f != nil {
		res.OK = false
		res.Findings = append(res.Findings, *f)
	}
	return res
}

// lookupFailed is the result of a check whose DNS questions got no answer.
func (e *Engine) lookupFailed(n Name) CheckResult {
	return CheckResult{
		LookupFailed: true,
		Observed:     Observed{Addresses: []string{}},
		Findings: []Finding{{
			Code:    FindingLookupFailed,
			Message: fmt.Sprintf("Could not check the DNS records of %s: the DNS servers did not answer in time or reported an error. This is not a verification failure; the check will be retried.", n.Unicode),
			Fix:     "Nothing to do now: the check is repeated automatically. If this keeps happening, make sure the nameservers of " + n.Registered + " are working.",
		}},
	}
}

// checkRouting checks the record that routes n to the platform.
//
// A record that resolves to addresses that are not the edge's (a proxy, a
// flattened CNAME) passes through the TXT record and the HTTP check
// (viaProxy) when the entry has a token; once the name has verified
// (verified), through the HTTP check alone.
func (e *Engine) checkRouting(ctx context.Context, n Name, token string, verified bool) CheckResult {
	res := CheckResult{Observed: Observed{Addresses: []string{}}, Findings: []Finding{}}
	failed := func(error) CheckResult { return e.lookupFailed(n) }
	cnames, err := e.cfg.Resolver.Lookup(ctx, n.ASCII, "CNAME")
	if err != nil {
		return failed(err)
	}
	if len(cnames) > 0 {
		res.Observed.CNAME = dnsName(cnames[0].Value)
		if res.Observed.CNAME == e.target {
			res.OK = true
			return res
		}
		fix := "Change the CNAME value to " + e.target
		if n.Kind == KindApex {
			fix = "Replace the record at @ with an ALIAS (or ANAME) record pointing to " + e.target
		}
		res.Findings = append(res.Findings, Finding{
			Code:    FindingCNAMEMismatch,
			Message: fmt.Sprintf("%s points to %s", n.Unicode, res.Observed.CNAME),
			Fix:     fix,
			Records: []Record{{Type: "CNAME", Name: n.ASCII, Value: res.Observed.CNAME}},
		})
		return res
	}
	var addrs []netip.Addr
	var recs []Record
	for _, typ := range []string{"A", "AAAA"} {
		got, err := e.cfg.Resolver.Lookup(ctx, n.ASCII, typ)
		if err != nil {
			return failed(err)
		}
		for _, r := range got {
			if ip, err := netip.ParseAddr(r.Value); err == nil {
				addrs = append(addrs, ip.Unmap())
				recs = append(recs, Record{Type: r.Type, Name: n.ASCII, Value: ip.Unmap().String(), TTL: r.TTL})
				res.Observed.Addresses = append(res.Observed.Addresses, ip.Unmap().String())
			}
		}
	}
	if len(addrs) == 0 {
		f, err := e.otherRecords(ctx, n)
		switch {
		case err != nil:
			return failed(err)
		case f != nil:
			res.Findings = append(res.Findings, *f)
		default:
			res.Findings = append(res.Findings, e.noRecords(ctx, n))
		}
		return res
	}
	if !e.edgeKnown(ctx) {
		// The edge's own addresses could not be looked up: whether these
		// are they is unknown, which is no verdict.
		return failed(nil)
	}
	if e.isEdge(ctx, addrs) {
		res.OK = true
		return res
	}
	foreign := e.foreign(ctx, addrs)
	base := Finding{
		Code:    FindingApexForeignIPs,
		Message: fmt.Sprintf("%s resolves to %s, which is not an address of this platform", n.Unicode, strings.Join(foreign, ", ")),
		Fix:     fmt.Sprintf("Delete the A/AAAA records at @ that point to %s, then %s", strings.Join(foreign, ", "), e.apexInstruction(ctx)),
		Records: recs,
	}
	if n.Kind != KindApex {
		base = Finding{
			Code: FindingConflictingRecord,
			Message: fmt.Sprintf("%s has %s (%s), which blocks the CNAME record: a name with a CNAME can have no other records; %s not this platform's edge",
				n.Unicode, recordWords(recs), strings.Join(foreign, ", "), theseAre(len(foreign))),
			Fix:     fmt.Sprintf("Delete the A and AAAA records for %s at your DNS provider, then create the CNAME record %s → %s", n.Label, n.Label, e.target),
			Records: recs,
		}
	}
	f, err := e.viaProxy(ctx, n, token, verified, addrs, base)
	switch {
	case err != nil:
		return failed(err)
	case f == nil:
		res.OK = true // proved by the TXT record and the HTTP check
	default:
		res.Findings = append(res.Findings, *f)
	}
	return res
}

// otherRecords returns the CONFLICTING_RECORD finding of a subdomain
// without a CNAME or addresses that has TXT or MX records: a name with a
// CNAME can have no other records, so DNS providers refuse to create the
// CNAME until they are gone. It returns nil when there are none, and
// always for an apex, where they sit beside an ALIAS.
func (e *Engine) otherRecords(ctx context.Context, n Name) (*Finding, error) {
	if n.Kind == KindApex {
		return nil, nil
	}
	var recs []Record
	var types []string
	for _, typ := range []string{"TXT", "MX"} {
		got, err := e.cfg.Resolver.Lookup(ctx, n.ASCII, typ)
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			recs = append(recs, Record{Type: typ, Name: n.ASCII, Value: r.Value, TTL: r.TTL})
		}
		if len(got) > 0 {
			types = append(types, typ)
		}
	}
	if len(recs) == 0 {
		return nil, nil
	}
	kinds := strings.Join(types, " and ")
	return &Finding{
		Code: FindingConflictingRecord,
		Message: fmt.Sprintf("%s has %s records, which block the CNAME record: a name with a CNAME can have no other records, so the CNAME cannot be created",
			n.Unicode, kinds),
		Fix:     fmt.Sprintf("Delete the %s records for %s at your DNS provider, then create the CNAME record %s → %s", kinds, n.Label, n.Label, e.target),
		Records: recs,
	}, nil
}

func (e *Engine) noRecords(ctx context.Context, n Name) Finding {
	f := Finding{
		Code:    FindingNoRecords,
		Message: fmt.Sprintf("No DNS records were found for %s yet. DNS changes can take up to 48 hours to propagate, though usually only minutes.", n.Unicode),
	}
	if n.Kind != KindApex {
		f.Fix = fmt.Sprintf("Create a CNAME record with name %s and value %s (TTL 3600). If you already did, wait: it is checked again automatically.", n.Label, e.target)
	} else {
		f.Fix = strings.ToUpper(e.apexInstruction(ctx)[:1]) + e.apexInstruction(ctx)[1:] + ". If you already did, wait: it is checked again automatically."
	}
	return f
}

func (e *Engine) apexInstruction(ctx context.Context) string {
	s := "create an ALIAS (or ANAME) record at @ pointing to " + e.target
	if ips := e.edgeList(ctx); len(ips) > 0 {
		words := make([]string, len(ips))
		for i, ip := range ips {
			words[i] = ip.String()
		}
		s += ", or, if your DNS provider has no ALIAS records, A/AAAA records at @ with " + strings.Join(words, " and ")
	}
	return s
}

func (e *Engine) foreign(ctx context.Context, addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		if !e.isEdge(ctx, []netip.Addr{a}) {
			out = append(out, a.String())
		}
	}
	return out
}

func recordWords(recs []Record) string {
	hasA, hasAAAA := false, false
	for _, r := range recs {
		if r.Type == "AAAA" {
			hasAAAA = true
		} else {
			hasA = true
		}
	}
	switch {
	case hasA && hasAAAA:
		return "A and AAAA records"
	case hasAAAA:
		return "an AAAA record"
	}
	return "an A record"
}

func theseAre(n int) string {
	if n == 1 {
		return "that address is"
	}
	return "those addresses are"
}
