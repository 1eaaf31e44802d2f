package dnsconv

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

// Matcher returns the libdns DeleteRecords predicate for pattern in zone:
// the owner name must match; an empty Type, zero TTL or empty data matches
// any value. Data is compared as DNS data, so "2001:DB8::1" matches
// "2001:db8::1".
func Matcher(zone string, pattern libdns.Record) (func(dns.RR) bool, error) {
	r := pattern.RR()
	if r.Name == "" {
		return nil, errors.New("delete needs a record name")
	}
	owner, err := OwnerName(zone, r.Name)
	if err != nil {
		return nil, err
	}
	var rtype uint16
	if r.Type != "" {
		t, ok := dns.StringToType[strings.ToUpper(r.Type)]
		if !ok {
			return nil, fmt.Errorf("unknown record type %q", r.Type)
		}
		rtype = t
	}
	var want dns.RR
	if r.Data != "" {
		if r.Type == "" {
			return nil, fmt.Errorf("delete of %q gives data without a type", r.Name)
		}
		if want, err = ToDNS(zone, r); err != nil {
			return nil, err
		}
		want = RoundTrip(want)
	}
	ttl := uint32(r.TTL / time.Second)
	return func(rr dns.RR) bool {
		h := rr.Header()
		switch {
		case !strings.EqualFold(h.Name, owner),
			h.Rrtype == dns.TypeSOA,
			rtype != 0 && h.Rrtype != rtype,
			r.TTL != 0 && h.Ttl != ttl,
			want != nil && !dns.IsDuplicate(rr, want):
			return false
		}
		return true
	}, nil
}

// RoundTrip passes rr through the wire format so that it compares equal to
// records received from a server (escapes resolved, case as sent).
func RoundTrip(rr dns.RR) dns.RR {
	buf := make([]byte, dns.Len(rr)+64)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return rr
	}
	out, _, err := dns.UnpackRR(buf[:n], 0)
	if err != nil {
		return rr
	}
	return out
}
