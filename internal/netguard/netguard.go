// Package netguard says which addresses are public, for the outbound
// requests a customer can aim (webhook deliveries, the custom-domain
// ownership check through a proxy), so that none reaches the platform's
// own network: one list, one owner.
package netguard

import "net/netip"

// nonPublic lists the address blocks that are not public: IANA's special-purpose blocks (loopback,
// private, shared CGNAT, link-local, unspecified, multicast, reserved,
// documentation, benchmarking) and the IPv6 forms that embed or reach
// them. 6to4 and NAT64 addresses are judged by the IPv4 address inside.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Public reports whether a is a public unicast address: one the
// platform may connect to on a customer's say-so (a webhook receiver, a
// custom domain's ownership check) without reaching into its own
// network. A zone is ignored, an IPv4-mapped address is judged as IPv4.
func Public(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return Public(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return Public(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
