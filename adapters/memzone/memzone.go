// Package memzone is an in-memory libdns provider whose zones are also
// served by a real DNS server (miekg/dns) on a loopback address. Tests use
// it as the customer's DNS provider and as the DNS that resolvers, the
// domain engine and the ACME CA query: what a test writes through libdns is
// what a DNS query sees, at once.
package memzone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/internal/dnsconv"
)

// Provider holds zones in memory. It implements libdns.RecordGetter,
// RecordAppender, RecordSetter, RecordDeleter and ZoneLister and is safe for
// concurrent use. The zero value is not usable; call New.
type Provider struct {
	mu    sync.RWMutex
	zones map[string]*zone // by canonical name, "example.com."
}

// zone is one zone's records in wire-canonical form: each record has been
// packed and unpacked once, so it reads exactly as a DNS client would see it.
type zone struct {
	name    string
	soa     *dns.SOA
	records []dns.RR // insertion order, SOA excluded
}

var (
	_ libdns.RecordGetter   = (*Provider)(nil)
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordSetter   = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
	_ libdns.ZoneLister     = (*Provider)(nil)
)

// New returns a provider without zones; add them with AddZone.
func New() *Provider {
	return &Provider{zones: map[string]*zone{}}
}

// AddZone creates zone ("example.com." or "example.com") with an SOA and an
// NS record at its apex, so negative answers carry an SOA and DNS-01 zone
// discovery finds it. Adding an existing zone does nothing. It panics on a
// name that is not a domain name: zones are set up by test code.
func (p *Provider) AddZone(name string) {
	name = dns.CanonicalName(name)
	if _, ok := dns.IsDomainName(name); !ok {
		panic(fmt.Sprintf("memzone: invalid zone name %q", name))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.zones[name]; ok {
		return
	}
	ns := "ns1." + name
	if name == "." {
		ns = "ns1.memzone."
	}
	z := &zone{
		name: name,
		soa: &dns.SOA{
			Hdr:     dns.RR_Header{Name: name, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600},
			Ns:      ns,
			Mbox:    "hostmaster." + strings.TrimPrefix(name, "."),
			Serial:  1,
			Refresh: 3600, Retry: 600, Expire: 86400,
			Minttl: 60, // short negative caching: tests add records and ask again
		},
	}
	if name == "." {
		z.soa.Mbox = "hostmaster.memzone."
	}
	z.records = append(z.records, &dns.NS{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 3600}, Ns: ns})
	p.zones[name] = z
}

// ListZones implements libdns.ZoneLister, in name order.
func (p *Provider) ListZones(ctx context.Context) ([]libdns.Zone, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]libdns.Zone, 0, len(p.zones))
	for name := range p.zones {
		out = append(out, libdns.Zone{Name: name})
	}
	slices.SortFunc(out, func(a, b libdns.Zone) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// GetRecords implements libdns.RecordGetter. It returns every record of the
// zone except the SOA (libdns has no SOA type and it cannot be written), in
// the order they were added.
func (p *Provider) GetRecords(ctx context.Context, zoneName string) ([]libdns.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	z, err := p.zone(zoneName)
	if err != nil {
		return nil, err
	}
	return toLibdns(z.name, z.records)
}

// AppendRecords implements libdns.RecordAppender. A record identical to an
// existing one (same name, type and data) is not added twice: an RRset is a
// set. A CNAME next to other records at the same name, or another record
// next to a CNAME, is refused (RFC 1034 §3.6.2), and then nothing is added.
func (p *Provider) AppendRecords(ctx context.Context, zoneName string, recs []libdns.Record) ([]libdns.Record, error) {
	return p.edit(ctx, zoneName, func(z *zone) ([]libdns.Record, error) {
		rrs, err := toWire(z.name, recs)
		if err != nil {
			return nil, err
		}
		next, added, err := appendRRs(z.records, rrs)
		if err != nil {
			return nil, err
		}
		z.commit(next)
		return toLibdns(z.name, added)
	})
}

// SetRecords implements libdns.RecordSetter: for each (name, type) in recs
// the zone ends up holding exactly the given records. It is atomic: on error
// the zone is unchanged.
func (p *Provider) SetRecords(ctx context.Context, zoneName string, recs []libdns.Record) ([]libdns.Record, error) {
	return p.edit(ctx, zoneName, func(z *zone) ([]libdns.Record, error) {
		rrs, err := toWire(z.name, recs)
		if err != nil {
			return nil, err
		}
		type key struct {
			name  string
			rtype uint16
		}
		replace := map[key]bool{}
		for _, rr := range rrs {
			replace[key{rr.Header().Name, rr.Header().Rrtype}] = true
		}
		kept := make([]dns.RR, 0, len(z.records))
		for _, rr := range z.records {
			if !replace[key{rr.Header().Name, rr.Header().Rrtype}] {
				kept = append(kept, rr)
			}
		}
		next, _, err := appendRRs(kept, rrs)
		if err != nil {
			return nil, libdns.AtomicErr(err)
		}
		z.commit(next)
		return toLibdns(z.name, dedupe(rrs))
	})
}

// DeleteRecords implements libdns.RecordDeleter. Name must be given; an
// empty Type, zero TTL or empty data matches any. Records that do not exist
// are ignored. The SOA is never deleted.
func (p *Provider) DeleteRecords(ctx context.Context, zoneName string, recs []libdns.Record) ([]libdns.Record, error) {
	return p.edit(ctx, zoneName, func(z *zone) ([]libdns.Record, error) {
		matchers := make([]func(dns.RR) bool, 0, len(recs))
		for _, rec := range recs {
			m, err := dnsconv.Matcher(z.name, rec)
			if err != nil {
				return nil, fmt.Errorf("memzone: %w", err)
			}
			matchers = append(matchers, m)
		}
		var kept, deleted []dns.RR
		for _, rr := range z.records {
			if slices.ContainsFunc(matchers, func(m func(dns.RR) bool) bool { return m(rr) }) {
				deleted = append(deleted, rr)
			} else {
				kept = append(kept, rr)
			}
		}
		if len(deleted) > 0 {
			z.commit(kept)
		}
		return toLibdns(z.name, deleted)
	})
}

// edit runs fn on a zone under the write lock, after the checks every
// write starts with: a live context and an existing zone.
func (p *Provider) edit(ctx context.Context, zoneName string, fn func(z *zone) ([]libdns.Record, error)) ([]libdns.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	z, err := p.zone(zoneName)
	if err != nil {
		return nil, err
	}
	return fn(z)
}

// zone finds a zone by name; the caller holds p.mu.
func (p *Provider) zone(name string) (*zone, error) {
	z, ok := p.zones[dns.CanonicalName(name)]
	if !ok {
		return nil, fmt.Errorf("memzone: no zone %q (add it with AddZone)", name)
	}
	return z, nil
}

// commit replaces the records and bumps the serial, as a real server would,
// so secondaries and tests polling the SOA see a change.
func (z *zone) commit(records []dns.RR) {
	z.records = records
	z.soa.Serial++
}

// toWire converts and canonicalises libdns records for zoneName.
func toWire(zoneName string, recs []libdns.Record) ([]dns.RR, error) {
	out := make([]dns.RR, 0, len(recs))
	for _, rec := range recs {
		rr, err := canonical(zoneName, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, rr)
	}
	return out, nil
}

// canonical converts one record and passes it through the wire format, so
// that what is stored is exactly what a client unpacks (names lower-cased,
// escapes resolved) and a record that cannot be sent is refused now.
func canonical(zoneName string, rec libdns.Record) (dns.RR, error) {
	rr, err := dnsconv.ToDNS(zoneName, rec)
	if err != nil {
		return nil, fmt.Errorf("memzone: %w", err)
	}
	if rr.Header().Rrtype == dns.TypeNS && rr.Header().Name != dns.CanonicalName(zoneName) {
		// Delegations would need referral answers; the server does not do them.
		return nil, fmt.Errorf("memzone: NS records below the apex (delegations) are not supported")
	}
	buf := make([]byte, dns.Len(rr)+64)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("memzone: record %s: %w", rr.Header().Name, err)
	}
	out, _, err := dns.UnpackRR(buf[:n], 0)
	if err != nil {
		return nil, fmt.Errorf("memzone: record %s: %w", rr.Header().Name, err)
	}
	out.Header().Name = dns.CanonicalName(out.Header().Name)
	return out, nil
}

// appendRRs adds rrs to records, skipping duplicates, and enforces that a
// CNAME owns its name alone. A record added to an RRset gives the set its
// TTL: the records of one name and type share one (RFC 2181 §5.2), as a
// DNS server's update makes them. It returns the new slice and what was
// added; records is not modified.
func appendRRs(records, rrs []dns.RR) (next, added []dns.RR, err error) {
	next = slices.Clone(records)
	for _, rr := range rrs {
		if slices.ContainsFunc(next, func(old dns.RR) bool { return dns.IsDuplicate(old, rr) }) {
			continue
		}
		h := rr.Header()
		for i, old := range next {
			if oh := old.Header(); oh.Name == h.Name && oh.Rrtype == h.Rrtype && oh.Class == h.Class && oh.Ttl != h.Ttl {
				next[i] = dns.Copy(old)
				next[i].Header().Ttl = h.Ttl
			}
		}
		name, isCNAME := rr.Header().Name, rr.Header().Rrtype == dns.TypeCNAME
		for _, old := range next {
			if old.Header().Name != name {
				continue
			}
			oldCNAME := old.Header().Rrtype == dns.TypeCNAME
			if isCNAME || oldCNAME {
				return nil, nil, fmt.Errorf("memzone: %s: a CNAME cannot share its name with other records (%s %s exists)",
					name, dns.TypeToString[old.Header().Rrtype], strings.TrimSpace(strings.TrimPrefix(old.String(), old.Header().String())))
			}
		}
		next = append(next, rr)
		added = append(added, rr)
	}
	return next, added, nil
}

func dedupe(rrs []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if !slices.ContainsFunc(out, func(o dns.RR) bool { return dns.IsDuplicate(o, rr) }) {
			out = append(out, rr)
		}
	}
	return out
}

func toLibdns(zoneName string, rrs []dns.RR) ([]libdns.Record, error) {
	out := make([]libdns.Record, 0, len(rrs))
	for _, rr := range rrs {
		rec, err := dnsconv.FromDNS(zoneName, rr)
		if err != nil {
			return nil, fmt.Errorf("memzone: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}
