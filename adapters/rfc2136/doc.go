// Package rfc2136 is a libdns provider for any authoritative DNS server that
// accepts RFC 2136 dynamic updates signed with TSIG (BIND, Knot, PowerDNS):
// writes are UPDATE messages, reads are zone transfers (AXFR), both signed.
// Use it so the platform can write a customer's DNS records on a server the
// customer runs, without a provider-specific API. Its conversions between
// libdns and wire records live in internal/dnsconv, shared with
// adapters/memzone.
//
// # Why not github.com/libdns/rfc2136
//
// The upstream provider (read as of 2025, libdns v1 API)
// is a thin UPDATE/AXFR client, and this package keeps the same shape, but
// the platform relies on behaviour upstream does not have:
//
//   - DeleteRecords follows libdns's contract for partial records: an empty
//     type, zero TTL or empty data matches any value, and it returns the
//     records actually deleted. Upstream sends the given records as exact
//     deletions and returns its input, so "delete every TXT at this name"
//     deletes nothing.
//   - SetRecords is one UPDATE, all or nothing, and reports a refused
//     update as an error wrapping ErrRcode; GetRecords leaves out the SOA
//     and DNSSEC records a transfer carries (upstream returns them, the SOA
//     twice), so a caller comparing zones sees only what it can write.
//   - Every exchange is bounded (Timeout, 10 s by default) even when the
//     caller's context has no deadline, an UPDATE may take all of it
//     (miekg/dns alone gives up reading after 2 s), and every exchange ends
//     when the context is cancelled (miekg/dns heeds only its deadline); the TSIG algorithm defaults to
//     hmac-sha256 and an unknown one is refused before anything is sent
//     (upstream sends whatever KeyAlg holds, "." when empty).
//   - Record data round-trips exactly through the wire: TXT strings longer
//     than 255 octets are split and escapes resolved, CAA tags parse in any
//     case, names are checked against the zone (dnsconfig reads a zone back
//     after writing and compares, so a lossy conversion would report a
//     write as ignored).
//
// These are tested against a real Knot server (knotd) through the libdns
// conformance suite in adapters/providertest. Were upstream to gain them,
// this package could become a wrapper around it.
package rfc2136
