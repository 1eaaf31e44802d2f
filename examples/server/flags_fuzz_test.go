package main

import (
	"encoding/base64"
	"net"
	"strings"
	"testing"
)

// noEnv is an environment with no variable set.
func noEnv(string) string { return "" }

// FuzzTrustedProxies: -trusted-proxies is refused, or reads into one
// valid, masked prefix for each item given.
func FuzzTrustedProxies(f *testing.F) {
	for _, s := range []string{"", "10.0.0.0/8", "127.0.0.1, ::1", "192.0.2.7/24,2001:db8::1/32", "fe80::1%eth0", "1.2.3.4/33", ",,", "::ffff:10.0.0.1/104"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := parseConfig([]string{"-trusted-proxies", s}, noEnv, &strings.Builder{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "-trusted-proxies: ") {
				t.Fatalf("%q: error %q names no flag", s, err)
			}
			return
		}
		if len(cfg.trustedProxies) != len(splitList(s)) {
			t.Fatalf("%q read into %v", s, cfg.trustedProxies)
		}
		for _, p := range cfg.trustedProxies {
			if !p.IsValid() || p != p.Masked() {
				t.Fatalf("%q read into %v: %v is not a valid masked prefix", s, cfg.trustedProxies, p)
			}
		}
	})
}

// FuzzEdgeIPs: -edge-ips is refused, or reads into one valid address for
// each item given.
func FuzzEdgeIPs(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1", "192.0.2.1, 2001:db8::1,", "::ffff:1.2.3.4", "10.0.0.0/8", "fe80::1%eth0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := parseConfig([]string{"-edge-ips", s}, noEnv, &strings.Builder{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "-edge-ips: ") {
				t.Fatalf("%q: error %q names no flag", s, err)
			}
			return
		}
		if len(cfg.edgeIPs) != len(splitList(s)) {
			t.Fatalf("%q read into %v", s, cfg.edgeIPs)
		}
		for _, ip := range cfg.edgeIPs {
			if !ip.IsValid() {
				t.Fatalf("%q read into %v", s, cfg.edgeIPs)
			}
		}
	})
}

// FuzzDNSResolvers: -dns-resolvers is refused, or each nameserver it
// reads is host[:port] with a port that can be asked.
func FuzzDNSResolvers(f *testing.F) {
	for _, s := range []string{"", "8.8.8.8", "[::1]:53, dns.google", "127.0.0.1:0", "a..b", "x:65536", "ns1.example.com.:5353"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := parseConfig([]string{"-dns-resolvers", s}, noEnv, &strings.Builder{})
		if err != nil {
			return
		}
		for _, r := range cfg.dnsResolvers {
			if r == "" || strings.ContainsAny(r, " ,") {
				t.Fatalf("%q read into resolver %q", s, r)
			}
		}
	})
}

// leaks reports whether err shows secret, when secret is long enough to
// tell and is found nowhere else the error may rightly quote.
func leaks(err error, secret string, elsewhere ...string) bool {
	if err == nil || len(secret) < 6 {
		return false
	}
	for _, s := range append(elsewhere, dnsProviderUsage) {
		if strings.Contains(s, secret) {
			return false
		}
	}
	return strings.Contains(err.Error(), secret)
}

// FuzzDNSProviderFlag: -dns-provider is refused with an error that never
// shows the TSIG secret, or reads into a provider with zones whose key
// the rfc2136 adapter can sign with.
func FuzzDNSProviderFlag(f *testing.F) {
	f.Add("rfc2136", "key", "c2VjcmV0c2VjcmV0", "127.0.0.1:53", "hmac-sha256", "example.com")
	f.Add("rfc2136", "k", "ab/c+d==", "[::1]:5353", "HMAC-SHA512.", "example.com,example.net.")
	f.Add("rfc2136", "key", "bm90IGJhc2U2NA%", "127.0.0.1", "hmac-md5", "")
	f.Add("memory", "", "", "", "", "example.com&listen=127.0.0.1:0")
	f.Fuzz(func(t *testing.T, scheme, name, secret, host, alg, zones string) {
		v := scheme + "://" + name + ":" + secret + "@" + host + "?alg=" + alg + "&zones=" + zones
		cfg, err := parseConfig([]string{"-dns-provider", v}, noEnv, &strings.Builder{})
		if leaks(err, secret, scheme, name, host, alg, zones) {
			t.Fatalf("%q: the error shows the secret: %v", v, err)
		}
		if err != nil {
			return
		}
		p := cfg.dnsProvider
		if p == nil || len(p.zones) == 0 {
			t.Fatalf("%q read into %+v", v, p)
		}
		if p.kind != "rfc2136" {
			return
		}
		if _, err := base64.StdEncoding.DecodeString(p.rfc.KeySecret); err != nil || p.rfc.CheckAlgorithm() != nil || !strings.HasSuffix(p.rfc.KeyName, ".") {
			t.Fatalf("%q read into %v", v, p.rfc)
		}
		if _, _, err := net.SplitHostPort(p.rfc.Server); err != nil {
			t.Fatalf("%q read into server %q", v, p.rfc.Server)
		}
	})
}

// FuzzSecretFlags: an error about -db or -redis never shows the password
// given in its user info.
func FuzzSecretFlags(f *testing.F) {
	f.Add("postgres", "s3cr3tpass", "127.0.0.1:5432/db?sslmode=disable")
	f.Add("mysql", "s3cr3tpass", "tcp(127.0.0.1:3306)/db")
	f.Add("postgres", "s3cr3tpass", "h:notaport/db")
	f.Add("postgresql", "s3cr3t%zz", "h/db?sslmode=nope")
	f.Add("redis", "s3cr3tpass", "127.0.0.1:6379/0")
	f.Add("redis", "s3cr3tpass", "h:99999")
	f.Add("rediss", "s3cr3t%zz", "h")
	f.Fuzz(func(t *testing.T, scheme, password, rest string) {
		flag := "-db"
		if strings.HasPrefix(scheme, "redis") {
			flag = "-redis"
		}
		v := scheme + "://u:" + password + "@" + rest
		_, err := parseConfig([]string{flag, v}, noEnv, &strings.Builder{})
		if leaks(err, password, scheme, rest) {
			t.Fatalf("%s %q: the error shows the password: %v", flag, v, err)
		}
	})
}
