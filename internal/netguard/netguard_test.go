package netguard

import (
	"net/netip"
	"testing"
)

func TestPublic(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"93.184.215.14", true}, {"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true}, {"8.8.8.8", true},
		{"127.0.0.1", false}, {"127.255.0.9", false}, {"::1", false}, // loopback
		{"10.1.2.3", false}, {"172.16.0.1", false}, {"172.31.255.255", false}, {"192.168.1.1", false}, {"fd00::1", false}, // private
		{"169.254.169.254", false}, {"fe80::1", false}, {"fe80::1%eth0", false}, // link-local, cloud metadata
		{"0.0.0.0", false}, {"::", false}, {"0.1.2.3", false}, // unspecified, "this network"
		{"224.0.0.1", false}, {"ff02::1", false}, {"255.255.255.255", false}, // multicast, broadcast
		{"100.64.0.1", false}, {"100.127.255.254", false}, {"100.128.0.1", true}, // CGNAT and just past it
		{"172.32.0.1", true}, {"192.0.2.1", false}, {"198.18.0.1", false}, {"2001:db8::1", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.1", false}, {"::ffff:8.8.8.8", true}, // IPv4-mapped
		{"64:ff9b::a00:1", false}, {"64:ff9b::808:808", true}, // NAT64 of 10.0.0.1 and 8.8.8.8
		{"2002:a00:1::1", false}, {"2002:808:808::1", true}, // 6to4 of 10.0.0.1 and 8.8.8.8
		{"::127.0.0.1", false},                     // IPv4-compatible
		{"192.0.0.8", false}, {"2001:2::1", false}, // IETF protocol assignments, benchmarking
	} {
		a, err := netip.ParseAddr(tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := Public(a); got != tc.public {
			t.Errorf("Public(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}
