// Package rfc2136 is a libdns provider for any authoritative DNS server that
// accepts RFC 2136 dynamic updates signed with TSIG (BIND, Knot, PowerDNS):
// writes are UPDATE messages, reads are zone transfers (AXFR), both signed.
// Use it so the platform can write a customer's DNS records on a server the
// customer runs, without a provider-specific API.
//
// It also holds the conversion between libdns records and miekg/dns records
// ([ToDNS], [FromDNS]) that the in-memory zone (adapters/memzone) shares.
package rfc2136
