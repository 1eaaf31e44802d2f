// Package dnsconv converts between libdns records and miekg/dns resource
// records, for the two adapters that speak DNS on the wire: rfc2136 (a
// remote server's dynamic updates) and memzone (a zone served in
// process). It is shared so that the two agree on every record type, and
// so that neither adapter depends on the other.
package dnsconv

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

// ToDNS converts a libdns record of zone into the miekg/dns record a DNS
// message carries. Names in the record (owner, CNAME/MX/NS targets) that do
// not end in a dot are taken as follows: the owner is relative to zone ("@"
// or "" is the apex), because that is the libdns convention; targets are
// fully qualified, because providers and users write "target.example.net"
// meaning exactly that host, never "target.example.net.example.com".
//
// TXT text and CAA values are unescaped libdns data: ToDNS escapes them and
// splits TXT text into the 255-byte strings the wire format needs.
func ToDNS(zone string, rec libdns.Record) (dns.RR, error) {
	r := rec.RR()
	owner, err := OwnerName(zone, r.Name)
	if err != nil {
		return nil, err
	}
	typ := strings.ToUpper(strings.TrimSpace(r.Type))
	rrtype, ok := dns.StringToType[typ]
	if !ok || typ == "" {
		return nil, fmt.Errorf("unknown record type %q", r.Type)
	}
	if r.TTL < 0 || r.TTL/time.Second > 1<<31-1 {
		return nil, fmt.Errorf("record %s %s: TTL %v out of range", owner, typ, r.TTL)
	}
	hdr := dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: uint32(r.TTL / time.Second)}
	if r.Data == "" {
		return nil, fmt.Errorf("record %s %s: empty data", owner, typ)
	}
	switch rrtype {
	case dns.TypeA, dns.TypeAAAA:
		ip, err := netip.ParseAddr(strings.TrimSpace(r.Data))
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("record %s %s: invalid IP address %q", owner, typ, r.Data)
		}
		if rrtype == dns.TypeA {
			if !ip.Is4() {
				return nil, fmt.Errorf("record %s A: %q is not an IPv4 address", owner, r.Data)
			}
			return &dns.A{Hdr: hdr, A: ip.AsSlice()}, nil
		}
		if !ip.Is6() || ip.Is4In6() {
			return nil, fmt.Errorf("record %s AAAA: %q is not an IPv6 address", owner, r.Data)
		}
		return &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()}, nil
	case dns.TypeCNAME:
		target, err := targetName(r.Data)
		if err != nil {
			return nil, fmt.Errorf("record %s CNAME: %w", owner, err)
		}
		return &dns.CNAME{Hdr: hdr, Target: target}, nil
	case dns.TypeTXT:
		return &dns.TXT{Hdr: hdr, Txt: splitTXT(r.Data)}, nil
	case dns.TypeCAA:
		// libdns parses the type case-sensitively: hand it the upper-case
		// type the lookup above used, so "caa" and "CaA" are CAA too.
		r.Type = typ
		rec, err := r.Parse()
		if err != nil {
			return nil, fmt.Errorf("record %s CAA: %w", owner, err)
		}
		caa, ok := rec.(libdns.CAA)
		if !ok {
			return nil, fmt.Errorf("record %s CAA: cannot parse %q", owner, r.Data)
		}
		if caa.Tag == "" || !isAlnum(caa.Tag) {
			return nil, fmt.Errorf("record %s CAA: invalid tag %q", owner, caa.Tag)
		}
		return &dns.CAA{Hdr: hdr, Flag: caa.Flags, Tag: caa.Tag, Value: escapeOctets(caa.Value, false)}, nil
	case dns.TypeSOA:
		return nil, fmt.Errorf("record %s: SOA records are managed by the server", owner)
	}
	if strings.TrimSpace(r.Data) == "" {
		// Blank data parses as a record with no data at all (an empty
		// TXT-like AVC, say), which no reader can give back: refused, as
		// empty data is. (TXT above keeps its text as it is, spaces too.)
		return nil, fmt.Errorf("record %s %s: empty data", owner, typ)
	}
	if strings.ContainsAny(r.Data, "\n\r;$") {
		// One record's data is one line: no comments, directives or more records.
		return nil, fmt.Errorf("record %s %s: data %q spans lines or holds zone-file syntax", owner, typ, r.Data)
	}
	// Other types go through the zone-file parser. Origin "." makes names in
	// the data fully qualified, as for CNAME targets above.
	rr, err := parseRR(owner, hdr.Ttl, typ, r.Data)
	if err != nil {
		return nil, err
	}
	// FromDNS gives such records back as their text: refuse one whose text
	// miekg/dns cannot read again (an NXT with an empty type bitmap prints
	// as "None"), so that what is written can always be read back.
	if _, err := parseRR(owner, hdr.Ttl, typ, rrData(rr)); err != nil {
		return nil, fmt.Errorf("record %s %s: data %q has no text form that reads back", owner, typ, r.Data)
	}
	return rr, nil
}

// parseRR parses one record of type typ from its zone-file data.
func parseRR(owner string, ttl uint32, typ, data string) (dns.RR, error) {
	zp := dns.NewZoneParser(strings.NewReader(fmt.Sprintf("%s %d IN %s %s\n", owner, ttl, typ, data)), ".", "")
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("record %s %s: %w", owner, typ, err)
	}
	if !ok || rr == nil {
		return nil, fmt.Errorf("record %s %s: cannot parse %q", owner, typ, data)
	}
	if _, more := zp.Next(); more {
		return nil, fmt.Errorf("record %s %s: data %q holds more than one record", owner, typ, data)
	}
	return rr, nil
}

// rrData is a record's data as zone-file text: its text without the header.
func rrData(rr dns.RR) string {
	return strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}

// FromDNS converts a record received from a DNS server (or unpacked from
// wire format) for zone into the typed libdns record: Address, CNAME, TXT,
// CAA, MX or NS, and libdns.RR for other types. Names
// come back relative to zone ("@" for the apex) and targets fully qualified.
func FromDNS(zone string, rr dns.RR) (libdns.Record, error) {
	hdr := rr.Header()
	name := RelativeName(zone, hdr.Name)
	ttl := time.Duration(hdr.Ttl) * time.Second
	switch v := rr.(type) {
	case *dns.A:
		ip, ok := netip.AddrFromSlice(v.A.To4())
		if !ok {
			return nil, fmt.Errorf("record %s A: bad address", hdr.Name)
		}
		return libdns.Address{Name: name, TTL: ttl, IP: ip}, nil
	case *dns.AAAA:
		ip, ok := netip.AddrFromSlice(v.AAAA.To16())
		if !ok {
			return nil, fmt.Errorf("record %s AAAA: bad address", hdr.Name)
		}
		return libdns.Address{Name: name, TTL: ttl, IP: ip}, nil
	case *dns.CNAME:
		return libdns.CNAME{Name: name, TTL: ttl, Target: v.Target}, nil
	case *dns.TXT:
		return libdns.TXT{Name: name, TTL: ttl, Text: Text(v)}, nil
	case *dns.CAA:
		// Unpacked CAA values are raw octets (miekg/dns does not escape
		// them on unpack), so they are already libdns data.
		return libdns.CAA{Name: name, TTL: ttl, Flags: v.Flag, Tag: v.Tag, Value: v.Value}, nil
	}
	generic := libdns.RR{Name: name, TTL: ttl, Type: dns.TypeToString[hdr.Rrtype], Data: rrData(rr)}
	if generic.Type == "" {
		generic.Type = "TYPE" + strconv.Itoa(int(hdr.Rrtype))
	}
	if generic.Type != "MX" && generic.Type != "NS" {
		// SRV, HTTPS and SVCB parse into libdns structs whose names encode
		// service labels and do not round-trip reliably: keep them opaque.
		return generic, nil
	}
	parsed, err := generic.Parse()
	if err != nil {
		return generic, nil
	}
	return parsed, nil
}

// Text returns a TXT record's text as its owner wrote it: its strings
// joined, without the escapes miekg/dns adds when it unpacks them (\" for
// a quote, \DDD for a byte that is not printable ASCII).
func Text(txt *dns.TXT) string {
	var b strings.Builder
	for _, s := range txt.Txt {
		b.WriteString(unescapeOctets(s))
	}
	return b.String()
}

// OwnerName returns the fully qualified, lower-case owner name of a libdns
// record name in zone. It accepts "@" and "" for the apex and names that are
// already fully qualified (ending in a dot) inside zone.
func OwnerName(zone, name string) (string, error) {
	zone = dns.CanonicalName(zone)
	if _, ok := dns.IsDomainName(zone); !ok {
		return "", fmt.Errorf("invalid zone %q", zone)
	}
	name = strings.TrimSpace(name)
	var fqdn string
	switch {
	case name == "" || name == "@":
		fqdn = zone
	case strings.HasSuffix(name, "."):
		fqdn = dns.CanonicalName(name)
		if !dns.IsSubDomain(zone, fqdn) {
			return "", fmt.Errorf("name %q is outside zone %q", name, zone)
		}
	default:
		if zone == "." {
			fqdn = dns.CanonicalName(name + ".")
		} else {
			fqdn = dns.CanonicalName(name + "." + zone)
		}
	}
	if err := checkName(fqdn); err != nil {
		return "", fmt.Errorf("invalid name %q: %w", name, err)
	}
	return fqdn, nil
}

// RelativeName returns fqdn relative to zone in libdns form: "@" for the
// apex, "www" for www.<zone>; names outside zone come back fully qualified.
func RelativeName(zone, fqdn string) string {
	zone = dns.CanonicalName(zone)
	fqdn = dns.CanonicalName(fqdn)
	switch {
	case fqdn == zone:
		return "@"
	case zone == ".":
		return strings.TrimSuffix(fqdn, ".")
	case strings.HasSuffix(fqdn, "."+zone):
		return strings.TrimSuffix(fqdn, "."+zone)
	}
	return fqdn
}

// targetName validates a CNAME target and makes it fully qualified.
func targetName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty target")
	}
	fqdn := dns.CanonicalName(s)
	if err := checkName(fqdn); err != nil {
		return "", fmt.Errorf("invalid target %q: %w", s, err)
	}
	return fqdn, nil
}

// checkName rejects names that are not plain host names (or wildcards and
// underscore labels): zone-file escapes would not survive a round trip.
func checkName(fqdn string) error {
	if _, ok := dns.IsDomainName(fqdn); !ok {
		return errors.New("not a domain name")
	}
	for i := 0; i < len(fqdn); i++ {
		c := fqdn[i]
		if !(isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '*' || c == '.') {
			return fmt.Errorf("character %q not allowed (use letters, digits, '-', '_', '*'; IDNs in punycode)", c)
		}
	}
	if fqdn != "." && strings.Contains(fqdn, "..") {
		return errors.New("empty label")
	}
	return nil
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// splitTXT cuts raw text into escaped character-strings of at most 255
// raw bytes each (RFC 1035 §3.3.14). Empty text is one empty string.
func splitTXT(text string) []string {
	if text == "" {
		return []string{""}
	}
	var out []string
	for len(text) > 0 {
		n := min(len(text), 255)
		out = append(out, escapeOctets(text[:n], true))
		text = text[n:]
	}
	return out
}

// escapeOctets writes raw bytes in the escaped form miekg/dns packs:
// backslash always, quotes and unprintable bytes when full is set.
func escapeOctets(s string, full bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case full && (c < ' ' || c > '~'):
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeOctets undoes the escaping miekg/dns applies when it unpacks a
// character-string.
func unescapeOctets(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		if i+2 < len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			n := int(s[i]-'0')*100 + int(s[i+1]-'0')*10 + int(s[i+2]-'0')
			if n <= 255 {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
