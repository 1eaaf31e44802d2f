package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/rfc2136"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
)

// TestConfigureDNSForMe is "Configure DNS for me" end to end against a
// real Knot server: the server is given Knot as the platform's DNS
// (-dns-provider rfc2136://...) and as its resolver; the dashboard writes
// exactly the records it shows, the domain verifies and serves, a record
// in the way is reported instead of overwritten, a name outside the zones
// is refused, and removing the domain deletes what was written.
func TestConfigureDNSForMe(t *testing.T) {
	knot := rfc2136test.StartKnot(t, "example.com.")
	const pro = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	// The secret is base64 with "/" and "+" in it, given as it is.
	provider := "rfc2136://" + rfc2136test.KeyName + ":" + knot.Secret + "@" + knot.Addr + "?alg=hmac-sha256&zones=example.com"
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-keys", pro + ":pro",
		"-dns-resolvers", knot.Addr, "-cname-target", "edge.petstore.test"},
		map[string]string{"PETSTORE_DNS_PROVIDER": provider})

	type domainView struct {
		Name       string                               `json:"name"`
		Status     string                               `json:"status"`
		DNSManaged bool                                 `json:"dnsManaged"`
		Records    []struct{ Type, Name, Value string } `json:"records"`
	}
	type configured struct {
		Findings []struct{ Code, Message string } `json:"findings"`
		Domain   domainView                       `json:"domain"`
	}
	add := func(name string) domainView {
		t.Helper()
		status, _, body := call(t, "POST", base+"/dashboard/api/domains", pro, "", `{"name":"`+name+`"}`)
		if status != 201 {
			t.Fatalf("add %s: %d %s", name, status, body)
		}
		var d domainView
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	configure := func(name string) (int, configured, string) {
		t.Helper()
		status, _, body := call(t, "POST", base+"/dashboard/api/domains/"+url.PathEscape(name)+"/dns", pro, "", "")
		var c configured
		if status == 200 {
			if err := json.Unmarshal([]byte(body), &c); err != nil {
				t.Fatal(err)
			}
		}
		return status, c, body
	}
	zone := func() []libdns.RR {
		t.Helper()
		recs, err := knot.Provider().GetRecords(context.Background(), "example.com.")
		if err != nil {
			t.Fatal(err)
		}
		var out []libdns.RR
		for _, r := range recs {
			if rr := r.RR(); rr.Type != "SOA" && rr.Type != "NS" {
				out = append(out, rr)
			}
		}
		return out
	}

	// A name in the managed zone: offered, written, verified, served.
	d := add("shop.example.com")
	if !d.DNSManaged || d.Status != "pending" {
		t.Fatalf("added: %+v, want pending and dnsManaged", d)
	}
	status, c, body := configure("shop.example.com")
	if status != 200 || len(c.Findings) != 0 || c.Domain.Status != "active" {
		t.Fatalf("configure: %d %s", status, body)
	}
	got := zone()
	if len(got) != 1 || got[0].Type != "CNAME" || got[0].Name != d.Records[0].Name || strings.TrimSuffix(got[0].Data, ".") != d.Records[0].Value {
		t.Fatalf("zone after configure = %+v, want exactly the shown record %+v", got, d.Records)
	}
	if status, _, body := call(t, "GET", base+"/v1/pets", pro, "shop.example.com", ""); status != 200 {
		t.Fatalf("configured domain not served: %d %s", status, body)
	}

	// A record in the way is reported, not overwritten.
	if _, err := knot.Provider().AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.RR{Name: "blog", Type: "A", TTL: time.Hour, Data: "192.0.2.9"},
	}); err != nil {
		t.Fatal(err)
	}
	add("blog.example.com")
	status, c, body = configure("blog.example.com")
	if status != 200 || len(c.Findings) == 0 || c.Findings[0].Code != "CONFLICTING_RECORD" || c.Domain.Status == "active" {
		t.Fatalf("configure over a conflicting record: %d %s", status, body)
	}
	var blog []libdns.RR
	for _, rr := range zone() {
		if rr.Name == "blog" {
			blog = append(blog, rr)
		}
	}
	if len(blog) != 1 || blog[0].Type != "A" || blog[0].Data != "192.0.2.9" {
		t.Fatalf("the customer's record was touched: %+v", blog)
	}

	// A name outside the managed zones is not offered and is refused.
	if d := add("shop.example.org"); d.DNSManaged {
		t.Fatal("a name outside the managed zones is offered DNS configuration")
	}
	if status, _, body := configure("shop.example.org"); status != 400 || !strings.Contains(body, "invalid_request") {
		t.Fatalf("configure outside the zones: %d %s", status, body)
	}

	// Removing the domain deletes what was written, and only that.
	if status, _, body := call(t, "DELETE", base+"/dashboard/api/domains/shop.example.com", pro, "", ""); status != 204 {
		t.Fatalf("remove: %d %s", status, body)
	}
	for _, rr := range zone() {
		if rr.Name == "shop" {
			t.Fatalf("the written record outlived its domain: %+v", rr)
		}
	}
	if len(zone()) != 1 {
		t.Fatalf("removing shop changed other records: %+v", zone())
	}
}

// TestDNSProviderFlag: a bad -dns-provider stops the server at start with
// a message that never repeats the secret.
func TestDNSProviderFlag(t *testing.T) {
	for _, v := range []string{
		"rfc2136://key:c2VjcmV0@127.0.0.1:53",                     // no zones
		"rfc2136://key:not*base64@127.0.0.1:53?zones=example.com", // secret not base64
		"rfc2136://c2VjcmV0@127.0.0.1:53?zones=example.com",       // no key name
		"ftp://x?zones=example.com",                               // unknown kind
		"memory://?zones=example.com",                             // no listen
	} {
		_, err := parseConfig([]string{"-dns-provider", v}, func(string) string { return "" }, &strings.Builder{})
		if err == nil || !strings.HasPrefix(err.Error(), "-dns-provider: ") {
			t.Errorf("%s: err %v, want a -dns-provider error", v, err)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") || strings.Contains(err.Error(), "not*base64") {
			t.Errorf("%s: the error shows the secret: %v", v, err)
		}
	}
	cfg, err := parseConfig([]string{"-dns-provider", "rfc2136://k:ab/c+d==@127.0.0.1:5353?zones=example.com,Example.NET."}, func(string) string { return "" }, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.dnsProvider; p.rfc.KeySecret != "ab/c+d==" || p.rfc.KeyName != "k." || p.rfc.Server != "127.0.0.1:5353" || len(p.zones) != 2 {
		t.Fatalf("parsed %+v %+v", p, p.rfc)
	}
}

// TestDCVZoneFlag: -acme-dcv-zone must name a zone of -dns-provider (the
// platform writes DNS-01 records there) and needs -acme-ca; the drift
// flags take durations, and -domain-event-timeout one below the outbox
// lease.
func TestDCVZoneFlag(t *testing.T) {
	const dns = "memory://?zones=example.com,acme.petstore.example&listen=127.0.0.1:0"
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-acme-dcv-zone", "acme.petstore.example", "-dns-provider", dns}, "-acme-dcv-zone needs -acme-ca"},
		{[]string{"-acme-ca", "https://ca.example/dir", "-acme-dcv-zone", "other.example"}, "must be one of the zones of -dns-provider"},
		{[]string{"-acme-ca", "https://ca.example/dir", "-acme-dcv-zone", "other.example", "-dns-provider", dns}, "must be one of the zones of -dns-provider"},
		{[]string{"-recheck-active", "soon"}, "-recheck-active: want a positive duration"},
		{[]string{"-drift-grace", "-1h"}, "-drift-grace: want a positive duration"},
		{[]string{"-domain-event-timeout", "0s"}, "-domain-event-timeout: want a positive duration below 10s"},
		{[]string{"-domain-event-timeout", "10s"}, "-domain-event-timeout: want a positive duration below 10s"},
	} {
		if _, err := parseConfig(tc.args, noEnv, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	cfg, err := parseConfig([]string{"-acme-ca", "https://ca.example/dir", "-acme-dcv-zone", "ACME.petstore.example.", "-dns-provider", dns,
		"-recheck-active", "10m", "-drift-grace", "24h", "-domain-event-timeout", "2s"}, noEnv, &strings.Builder{})
	if err != nil || cfg.acmeDCVZone != "acme.petstore.example" || cfg.recheck != 10*time.Minute || cfg.driftGrace != 24*time.Hour || cfg.eventTimeout != 2*time.Second {
		t.Fatalf("parsed %q %v %v %v, %v", cfg.acmeDCVZone, cfg.recheck, cfg.driftGrace, cfg.eventTimeout, err)
	}
}

// TestDNSResolversFlag: each of -dns-resolvers must be a host[:port],
// the host an IP address or a name; anything else is refused at start,
// naming the item, rather than failing every verification later.
func TestDNSResolversFlag(t *testing.T) {
	for _, v := range []string{
		"8.8.8.8;1.1.1.1",        // not a comma
		"8.8.8.8 1.1.1.1",        // nor a space
		"127.0.0.1:notaport",     // a port that is not a number
		"127.0.0.1:0",            // nor one that can be asked
		"127.0.0.1:65536",        // nor out of range
		"dns.example:53:53",      // two ports
		"udp://127.0.0.1:53",     // a URL
		"ns_1.example.com",       // not a host name
		"[::1]:53,-bad-.example", // one bad among good ones
	} {
		_, err := parseConfig([]string{"-dns-resolvers", v}, func(string) string { return "" }, &strings.Builder{})
		if err == nil || !strings.HasPrefix(err.Error(), "-dns-resolvers: ") {
			t.Errorf("-dns-resolvers %q: err %v, want a -dns-resolvers error", v, err)
		}
	}
	for v, want := range map[string]int{
		"127.0.0.1:5353":                 1,
		"8.8.8.8, 1.1.1.1":               2,
		"[::1]:53,::1,dns.google":        3,
		"ns1.example.com:53, 10.0.0.53,": 2,
		"":                               0,
	} {
		cfg, err := parseConfig([]string{"-dns-resolvers", v}, func(string) string { return "" }, &strings.Builder{})
		if err != nil || len(cfg.dnsResolvers) != want {
			t.Errorf("-dns-resolvers %q: %v, %v; want %d resolvers", v, cfg.dnsResolvers, err, want)
		}
	}
}

// TestDNSProviderAlgorithm: a TSIG algorithm the rfc2136 adapter cannot
// sign with stops the server at start (as every flag error, a usage
// error: exit status 2),
// naming the algorithms it can and never the secret, instead of failing
// the first DNS write; each of those algorithms is accepted.
func TestDNSProviderAlgorithm(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, alg := range []string{"hmac-md5", "sha256", "hmac-sha256x"} {
		v := "rfc2136://key:c2VjcmV0@127.0.0.1:53?alg=" + alg + "&zones=example.com"
		_, err := parseConfig([]string{"-dns-provider", v}, noEnv, &strings.Builder{})
		if err == nil || !strings.HasPrefix(err.Error(), "-dns-provider: ") || !strings.Contains(err.Error(), "hmac-sha256, hmac-sha512") {
			t.Errorf("alg=%s: err %v, want a -dns-provider error listing the algorithms", alg, err)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("alg=%s: the error shows the secret: %v", alg, err)
		}
	}
	for _, alg := range rfc2136.Algorithms() {
		v := "rfc2136://key:c2VjcmV0@127.0.0.1:53?alg=" + strings.ToUpper(alg) + "&zones=example.com"
		if _, err := parseConfig([]string{"-dns-provider", v}, noEnv, &strings.Builder{}); err != nil {
			t.Errorf("alg=%s: %v", alg, err)
		}
	}
}
