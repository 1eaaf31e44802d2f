// Package dnsconfig writes the DNS records a custom domain needs at the
// customer's DNS provider, through any libdns provider. It implements
// customdomain.DNSConfigurator: it reads the zone first and reports records that
// stand in the way as findings instead of overwriting them, writes only
// what is missing, and reads the zone back because some servers (Knot, for
// a CNAME next to other data) accept an update and silently ignore it.
package dnsconfig

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/customdomain"
)

// Provider is what the configurator needs from a libdns provider.
type Provider interface {
	libdns.RecordGetter
	libdns.RecordAppender
	libdns.RecordDeleter
}

// Finding codes reported by Configure.
const (
	// CodeConflictingRecord: other records own the name where the wanted
	// record must go (an A record where a CNAME must go, a CNAME where an
	// address or TXT must go, or addresses of another host).
	CodeConflictingRecord = customdomain.FindingConflictingRecord
	// CodeCNAMEMismatch: the name already has a CNAME to another target.
	CodeCNAMEMismatch = customdomain.FindingCNAMEMismatch
	// CodeWriteNotApplied: the provider accepted the write but the record
	// is not in the zone when read back.
	CodeWriteNotApplied = "WRITE_NOT_APPLIED"
	// CodeUnsupportedRecord: the record type cannot be written through
	// libdns (ALIAS/ANAME are provider-specific).
	CodeUnsupportedRecord = "UNSUPPORTED_RECORD"
)

// DefaultTTL is the TTL of written records whose customdomain.Record has none:
// short, so a customer's later fix takes effect quickly.
const DefaultTTL = 5 * time.Minute

// maxTTL is the largest TTL a record holds, in seconds (RFC 2181 §8); a
// larger one asked for is written as it.
const maxTTL = 1<<31 - 1

// Configurator implements customdomain.DNSConfigurator over a libdns provider.
// It is safe for concurrent use if the provider is.
type Configurator struct {
	p Provider
}

var _ customdomain.DNSConfigurator = (*Configurator)(nil)

// New returns a configurator that reads and writes zones through p.
func New(p Provider) *Configurator { return &Configurator{p: p} }

// Configure implements customdomain.DNSConfigurator. Record names are relative to
// zone ("@" for the apex, "shop" for shop.<zone>) or fully qualified inside
// it. Records already present (same name, type and data, any TTL) are left
// as they are. A record written beside others of its name and type takes
// their TTL, not its own, so theirs does not change. It returns the records it created, named relative to zone
// with the value and TTL the zone holds (read back after the write), and
// findings for conflicts and ignored writes; an error means the provider
// could not be read or written (nothing is known about the zone's state
// beyond the findings already made and the records returned as created).
func (c *Configurator) Configure(ctx context.Context, zone string, records []customdomain.Record) ([]customdomain.Record, []customdomain.Finding, error) {
	existing, err := c.p.GetRecords(ctx, zone)
	if err != nil {
		return nil, nil, fmt.Errorf("dnsconfig: reading zone %s: %w", zone, err)
	}
	findings := []customdomain.Finding{}
	var wanted, toWrite []libdns.Record
	for _, r := range records {
		if want, f := toLibdns(zone, r); f == nil {
			wanted = append(wanted, want)
		}
	}
	for _, r := range records {
		want, f := toLibdns(zone, r)
		if f != nil {
			findings = append(findings, *f)
			continue
		}
		at := recordsAt(existing, want.RR().Name)
		if slices.ContainsFunc(at, func(e libdns.Record) bool { return same(e, want) }) ||
			slices.ContainsFunc(toWrite, func(e libdns.Record) bool { return same(e, want) }) {
			continue // already there (or already queued): nothing to do
		}
		if f := conflict(zone, want, at, wanted); f != nil {
			// The name's A and AAAA records meet the same foreign ones:
			// one finding says it.
			if !slices.ContainsFunc(findings, func(g customdomain.Finding) bool { return g.Code == f.Code && g.Message == f.Message }) {
				findings = append(findings, *f)
			}
			continue
		}
		toWrite = append(toWrite, inRRset(want, at))
	}
	if len(toWrite) == 0 {
		return []customdomain.Record{}, findings, nil
	}
	_, appendErr := c.p.AppendRecords(ctx, zone, toWrite)
	after, err := c.p.GetRecords(ctx, zone)
	switch {
	case appendErr != nil && err != nil:
		// Nothing is known of what the failed write left; claiming it
		// could later delete what the customer writes by hand instead.
		return []customdomain.Record{}, nil, fmt.Errorf("dnsconfig: writing %d record(s) to zone %s: %w", len(toWrite), zone, appendErr)
	case err != nil:
		// The provider took the write: it is this write's.
		return domainRecords(toWrite), nil, fmt.Errorf("dnsconfig: reading zone %s back: %w", zone, err)
	}
	created := []customdomain.Record{}
	for _, w := range toWrite {
		i := slices.IndexFunc(after, func(e libdns.Record) bool { return same(e, w) })
		if i >= 0 {
			created = append(created, toDomain(after[i])) // as the zone holds it: Unconfigure deletes exactly that
			continue
		}
		if appendErr != nil {
			continue
		}
		rr := w.RR()
		findings = append(findings, customdomain.Finding{
			Code: CodeWriteNotApplied,
			Message: fmt.Sprintf("The DNS provider accepted the %s record for %s but it is not in the zone: the provider ignored it, probably because of another record at that name.",
				rr.Type, fqdn(zone, rr.Name)),
			Fix:     fmt.Sprintf("Check the records at %s at your DNS provider, remove the ones that conflict, then create the record below.", fqdn(zone, rr.Name)),
			Records: []customdomain.Record{toDomain(w)},
		})
	}
	if appendErr != nil {
		// Part of a failed write may have landed: what is in the zone now
		// and was not before is this write's.
		return created, nil, fmt.Errorf("dnsconfig: writing %d record(s) to zone %s: %w", len(toWrite), zone, appendErr)
	}
	return created, findings, nil
}

// Unconfigure implements customdomain.DNSConfigurator: it deletes exactly
// records, as Configure returned them (name, type, data and, when set, TTL),
// by libdns's DeleteRecords. A record whose data or TTL differs now, which
// the customer changed, and every other record are never touched.
// Deleting records that are already gone is not an error.
func (c *Configurator) Unconfigure(ctx context.Context, zone string, records []customdomain.Record) error {
	var doomed []libdns.Record
	for _, r := range records {
		want, f := toLibdns(zone, r)
		if f != nil {
			continue // never written, so nothing to delete
		}
		rr := want.RR()
		rr.TTL = time.Duration(max(r.TTL, 0)) * time.Second // 0: whatever the TTL
		doomed = append(doomed, rr)
	}
	if len(doomed) == 0 {
		return nil
	}
	if _, err := c.p.DeleteRecords(ctx, zone, doomed); err != nil {
		return fmt.Errorf("dnsconfig: deleting %d record(s) from zone %s: %w", len(doomed), zone, err)
	}
	return nil
}

// inRRset gives want the TTL of the records of its type already at its
// name, if any. A DNS server keeps one TTL per RRset (RFC 2181 §5.2): Knot
// sets the whole RRset's to that of the record an update adds, so writing
// ours with its own TTL would change the TTL of the customer's records
// beside it, and leave it changed after Unconfigure.
func inRRset(want libdns.Record, at []libdns.Record) libdns.Record {
	rr := want.RR()
	for _, e := range at {
		if er := e.RR(); er.Type == rr.Type && er.TTL > 0 {
			if er.TTL == rr.TTL {
				return want
			}
			rr.TTL = er.TTL
			if typed, err := rr.Parse(); err == nil {
				return typed
			}
			return rr
		}
	}
	return want
}

// conflict reports whether records at the wanted record's name stand in
// its way; wanted is every record being configured, whose addresses are
// not another server's.
func conflict(zone string, want libdns.Record, at, wanted []libdns.Record) *customdomain.Finding {
	rr := want.RR()
	name := fqdn(zone, rr.Name)
	var others, cnames []libdns.Record
	for _, e := range at {
		switch e.RR().Type {
		case "CNAME":
			cnames = append(cnames, e)
		case "NS", "SOA", "RRSIG", "NSEC", "NSEC3", "DNSKEY":
			if rr.Type == "CNAME" {
				others = append(others, e)
			}
		default:
			others = append(others, e)
		}
	}
	switch rr.Type {
	case "CNAME":
		if len(cnames) > 0 {
			return &customdomain.Finding{
				Code:    CodeCNAMEMismatch,
				Message: fmt.Sprintf("%s already has a CNAME record pointing to %s, not to %s.", name, trimDot(cnames[0].RR().Data), trimDot(rr.Data)),
				Fix:     fmt.Sprintf("Change the CNAME record of %s to point to %s.", name, trimDot(rr.Data)),
				Records: domainRecords(cnames),
			}
		}
		if len(others) > 0 {
			return &customdomain.Finding{
				Code:    CodeConflictingRecord,
				Message: fmt.Sprintf("%s already has %s, and a CNAME record cannot share a name with other records.", name, describe(others)),
				Fix:     fmt.Sprintf("Delete the records listed here at %s, then create a CNAME record pointing to %s.", name, trimDot(rr.Data)),
				Records: domainRecords(others),
			}
		}
	default:
		if len(cnames) > 0 {
			return &customdomain.Finding{
				Code:    CodeConflictingRecord,
				Message: fmt.Sprintf("%s has a CNAME record to %s, so it cannot have a %s record.", name, trimDot(cnames[0].RR().Data), rr.Type),
				Fix:     fmt.Sprintf("Delete the CNAME record of %s, then create the %s record below.", name, rr.Type),
				Records: domainRecords(cnames),
			}
		}
		if isAddress(rr.Type) {
			var foreign []libdns.Record
			for _, e := range others {
				ours := slices.ContainsFunc(wanted, func(w libdns.Record) bool { return same(e, w) })
				if isAddress(e.RR().Type) && !ours {
					foreign = append(foreign, e)
				}
			}
			if len(foreign) > 0 {
				// Adding ours next to them, of either IP version, would
				// send part of the traffic elsewhere: the customer must
				// choose.
				return &customdomain.Finding{
					Code:    CodeConflictingRecord,
					Message: fmt.Sprintf("%s already has %s pointing to another server.", name, describe(foreign)),
					Fix:     fmt.Sprintf("Delete the records listed here at %s, then configure DNS again.", name),
					Records: domainRecords(foreign),
				}
			}
		}
	}
	return nil
}

// toLibdns converts a wanted customdomain.Record, or says why it cannot be
// written.
func toLibdns(zone string, r customdomain.Record) (libdns.Record, *customdomain.Finding) {
	typ := strings.ToUpper(strings.TrimSpace(r.Type))
	name := relName(zone, r.Name)
	ttl := DefaultTTL
	if r.TTL > 0 {
		ttl = time.Duration(min(r.TTL, maxTTL)) * time.Second
	}
	unsupported := func(why string) *customdomain.Finding {
		return &customdomain.Finding{
			Code:    CodeUnsupportedRecord,
			Message: fmt.Sprintf("The %s record for %s cannot be created automatically: %s.", typ, fqdn(zone, name), why),
			Fix:     "Create it yourself at your DNS provider.",
			Records: []customdomain.Record{r},
		}
	}
	switch typ {
	case "A", "AAAA":
		ip, err := netip.ParseAddr(strings.TrimSpace(r.Value))
		if err != nil || (typ == "A") != ip.Unmap().Is4() {
			return nil, unsupported("its value is not an IPv" + map[bool]string{true: "4", false: "6"}[typ == "A"] + " address")
		}
		return libdns.Address{Name: name, TTL: ttl, IP: ip.Unmap()}, nil
	case "CNAME":
		if strings.TrimSpace(r.Value) == "" {
			return nil, unsupported("it has no target")
		}
		return libdns.CNAME{Name: name, TTL: ttl, Target: strings.ToLower(trimDot(strings.TrimSpace(r.Value))) + "."}, nil
	case "TXT":
		return libdns.TXT{Name: name, TTL: ttl, Text: r.Value}, nil
	case "CAA":
		rec, err := libdns.RR{Name: name, TTL: ttl, Type: "CAA", Data: r.Value}.Parse()
		if err != nil {
			return nil, unsupported("its value is not in the form 0 issue \"ca.example\"")
		}
		return rec, nil
	case "ALIAS", "ANAME":
		return nil, unsupported("ALIAS/ANAME records are specific to each DNS provider")
	}
	return nil, unsupported("the type is not supported")
}

// same reports whether two records have the same name, type and data,
// whatever their TTLs.
func same(a, b libdns.Record) bool {
	ar, br := a.RR(), b.RR()
	if !strings.EqualFold(ar.Name, br.Name) || ar.Type != br.Type {
		return false
	}
	pa, errA := ar.Parse()
	pb, errB := br.Parse()
	if errA != nil || errB != nil {
		return ar.Data == br.Data
	}
	switch x := pa.(type) {
	case libdns.Address:
		return x.IP.Unmap() == pb.(libdns.Address).IP.Unmap()
	case libdns.CNAME:
		return strings.EqualFold(trimDot(x.Target), trimDot(pb.(libdns.CNAME).Target))
	case libdns.CAA:
		y := pb.(libdns.CAA)
		return x.Flags == y.Flags && strings.EqualFold(x.Tag, y.Tag) && x.Value == y.Value
	}
	return ar.Data == br.Data
}

func isAddress(rrtype string) bool { return rrtype == "A" || rrtype == "AAAA" }

func recordsAt(recs []libdns.Record, name string) []libdns.Record {
	var out []libdns.Record
	for _, r := range recs {
		if strings.EqualFold(r.RR().Name, name) {
			out = append(out, r)
		}
	}
	return out
}

// relName makes a customdomain.Record name relative to zone, libdns style.
func relName(zone, name string) string {
	zone = strings.ToLower(trimDot(zone))
	name = strings.ToLower(trimDot(strings.TrimSpace(name)))
	switch {
	case name == "" || name == "@" || name == zone:
		return "@"
	case strings.HasSuffix(name, "."+zone):
		return strings.TrimSuffix(name, "."+zone)
	}
	return name
}

func fqdn(zone, name string) string {
	if name == "@" || name == "" {
		return trimDot(zone)
	}
	return name + "." + trimDot(zone)
}

func trimDot(s string) string { return strings.TrimSuffix(s, ".") }

func toDomain(r libdns.Record) customdomain.Record {
	rr := r.RR()
	v := rr.Data
	if rr.Type == "CNAME" {
		v = trimDot(v)
	}
	return customdomain.Record{Type: rr.Type, Name: rr.Name, Value: v, TTL: int(rr.TTL / time.Second)}
}

func domainRecords(recs []libdns.Record) []customdomain.Record {
	out := make([]customdomain.Record, 0, len(recs))
	for _, r := range recs {
		out = append(out, toDomain(r))
	}
	return out
}

func describe(recs []libdns.Record) string {
	var parts []string
	for _, r := range recs {
		rr := r.RR()
		parts = append(parts, fmt.Sprintf("a %s record (%s)", rr.Type, trimDot(rr.Data)))
	}
	return strings.Join(parts, ", ")
}
