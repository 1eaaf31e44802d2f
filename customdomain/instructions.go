package customdomain

import (
	"cmp"
	"context"
	"net/netip"
	"strings"
)

// instructions returns the records a customer creates for n (held by
// en), the apex alternatives and the note that goes with them: the
// routing record, then the ownership TXT record with the entry's token,
// which verifies a proxied or flattened record and is required when
// another project held the name (en.OwnershipToken). edge is the edge's
// addresses (edgeList), for an apex's alternatives. It does no I/O.
func (e *Engine) instructions(n Name, en Entry, edge []netip.Addr) (records, alternatives []Record, note string) {
	records, alternatives, note = e.routingInstructions(n, edge)
	token := cmp.Or(en.Token, en.OwnershipToken)
	if token == "" { // stored before tokens existed
		return records, alternatives, note
	}
	rec, why := ownershipRecord(n, token), ownershipNote
	if en.OwnershipToken == "" {
		rec.Optional, why = true, proxiedNote
	}
	records = append(records, rec)
	if target := e.dcvTarget(en); target != "" {
		records = append(records, dcvRecord(n, target))
		if n.Kind == KindWildcard {
			note = strings.TrimSpace(note + " " + dcvWildcardNote)
		} else {
			note = strings.TrimSpace(note + " " + dcvNote)
		}
	}
	return records, alternatives, strings.TrimSpace(why + " " + note)
}

// proxiedNote explains the TXT record when it is not required.
const proxiedNote = "The TXT record is needed only if your DNS provider proxies or flattens the record " +
	"(for example Cloudflare's proxy), which hides it: the platform then verifies the name by the TXT record " +
	"and an HTTP check through the proxy."

// routingInstructions returns the records that route n to the platform.
func (e *Engine) routingInstructions(n Name, edge []netip.Addr) (records, alternatives []Record, note string) {
	if n.Kind != KindApex {
		return []Record{{Type: "CNAME", Name: n.Label, Value: e.target, TTL: DefaultRecordTTL}}, nil, ""
	}
	records = []Record{{Type: "ALIAS", Name: "@", Value: e.target, TTL: DefaultRecordTTL}}
	for _, ip := range edge {
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

// edgeList returns the edge's addresses: EdgeIPs, or what the CNAME
// target resolved to at the last lookup (Refresh, Run). Before the first
// lookup that succeeded, it looks them up now.
func (e *Engine) edgeList(ctx context.Context) []netip.Addr {
	if len(e.cfg.EdgeIPs) > 0 {
		return e.cfg.EdgeIPs
	}
	if p := e.edgeAddrs.Load(); p != nil {
		return *p
	}
	out, _ := e.lookupEdge(ctx)
	return out
}

// edgeKnown reports whether the edge's addresses are known: EdgeIPs, or
// what a lookup of the CNAME target answered, now or before. Until then,
// addresses that are not the edge's cannot be told apart from the edge's.
func (e *Engine) edgeKnown(ctx context.Context) bool {
	if len(e.cfg.EdgeIPs) > 0 || e.edgeAddrs.Load() != nil {
		return true
	}
	_, ok := e.lookupEdge(ctx)
	return ok
}

// lookupEdge resolves the CNAME target's A and AAAA records and, when
// both lookups answered, keeps the addresses for edgeList; when one
// failed, what was kept before stays. complete is whether both answered.
func (e *Engine) lookupEdge(ctx context.Context) (out []netip.Addr, complete bool) {
	out, complete = []netip.Addr{}, true
	for _, typ := range []string{"A", "AAAA"} {
		recs, err := e.cfg.Resolver.Lookup(ctx, e.target, typ)
		if err != nil {
			complete = false
			continue
		}
		for _, r := range recs {
			if ip, err := netip.ParseAddr(r.Value); err == nil {
				out = append(out, ip.Unmap())
			}
		}
	}
	if complete {
		e.edgeAddrs.Store(&out)
	}
	return out, complete
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
