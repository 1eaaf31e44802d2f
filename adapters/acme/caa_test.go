package acme_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

func caa(owner string, values ...string) []customdomain.Record {
	var out []customdomain.Record
	for _, v := range values {
		out = append(out, customdomain.Record{Type: "CAA", Name: owner, Value: v})
	}
	return out
}

func TestEvaluateCAA(t *testing.T) {
	ids := []string{"pebble.letsencrypt.org"}
	for _, tc := range []struct {
		desc    string
		name    string
		records []customdomain.Record
		allowed bool
		noIDs   bool // the CA's identities are unknown
	}{
		{"no records allow every CA", "shop.example.com", nil, true, false},
		{"issue naming the CA", "shop.example.com", caa("example.com", `0 issue "pebble.letsencrypt.org"`), true, false},
		{"issue names the CA in another case, with a trailing dot", "shop.example.com", caa("example.com", `0 issue "Pebble.LetsEncrypt.org."`), true, false},
		{"parameters after ; are ignored", "shop.example.com", caa("example.com", `0 issue "pebble.letsencrypt.org; validationmethods=dns-01"`), true, false},
		{"one of several issue records", "shop.example.com", caa("example.com", `0 issue "digicert.com"`, `0 issue "pebble.letsencrypt.org"`), true, false},
		{"issue naming another CA", "shop.example.com", caa("example.com", `0 issue "digicert.com"`), false, false},
		{"empty issue forbids all", "shop.example.com", caa("example.com", `0 issue ";"`), false, false},
		{"issuewild does not matter for a non-wildcard", "shop.example.com", caa("example.com", `0 issuewild "digicert.com"`), true, false},
		{"issuewild restricts a wildcard", "*.example.com", caa("example.com", `0 issue "pebble.letsencrypt.org"`, `0 issuewild "digicert.com"`), false, false},
		{"wildcard falls back to issue", "*.example.com", caa("example.com", `0 issue "pebble.letsencrypt.org"`), true, false},
		{"iodef alone does not restrict", "shop.example.com", caa("example.com", `0 iodef "mailto:sec@example.com"`), true, false},
		{"unknown non-critical tag is ignored", "shop.example.com", caa("example.com", `0 future "x"`), true, false},
		{"unknown critical tag blocks", "shop.example.com", caa("example.com", `128 future "x"`, `0 issue "pebble.letsencrypt.org"`), false, false},
		{"known critical tag does not block", "shop.example.com", caa("example.com", `128 issue "pebble.letsencrypt.org"`), true, false},
		{"unreadable record blocks", "shop.example.com", caa("example.com", `nonsense`), false, false},
		// No identities: nothing can match, so CAA is left to the CA.
		{desc: "unknown CA identities", name: "shop.example.com", records: caa("example.com", `0 issue "digicert.com"`), allowed: true, noIDs: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			use := ids
			if tc.noIDs {
				use = nil
			}
			v := acme.EvaluateCAA(tc.name, use, "example.com", tc.records)
			if v.Allowed != tc.allowed {
				t.Fatalf("allowed = %v (%s), want %v", v.Allowed, v.Reason, tc.allowed)
			}
			if v.Unchecked != tc.noIDs {
				t.Fatalf("unchecked = %v, want %v", v.Unchecked, tc.noIDs)
			}
			if !v.Allowed && v.Reason == "" {
				t.Fatal("a block without a reason")
			}
		})
	}
}

func TestParseCAA(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want acme.CAA
		ok   bool
	}{
		{`0 issue "letsencrypt.org"`, acme.CAA{Flags: 0, Tag: "issue", Value: "letsencrypt.org"}, true},
		{`128 ISSUEWILD ";"`, acme.CAA{Flags: 128, Tag: "issuewild", Value: ";"}, true},
		{`0 iodef mailto:a@b.c`, acme.CAA{Tag: "iodef", Value: "mailto:a@b.c"}, true},
		{`0 tbs "say \"hi\""`, acme.CAA{Tag: "tbs", Value: `say "hi"`}, true},
		{`0 issue ""`, acme.CAA{Tag: "issue"}, true},
		{`256 issue "x"`, acme.CAA{}, false},
		{`0 is-sue "x"`, acme.CAA{}, false},
		{`0 issue "x`, acme.CAA{}, false},
		{`issue`, acme.CAA{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := acme.ParseCAA(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseCAA(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseCAA(f *testing.F) {
	for _, s := range []string{`0 issue "letsencrypt.org"`, `128 issuewild ";"`, `0 iodef "mailto:x@y"`, `0 tbs "a\"b\\"`, `5 x`, ``, `0  issue   "a; b=c"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := acme.ParseCAA(s)
		if err != nil {
			return
		}
		if c.Tag == "" || c.Tag != strings.ToLower(c.Tag) {
			t.Fatalf("ParseCAA(%q) tag %q: want non-empty and lower case", s, c.Tag)
		}
		// Whatever parses must evaluate without panicking.
		acme.EvaluateCAA("a.example.com", []string{"ca.example"}, "example.com", []customdomain.Record{{Type: "CAA", Value: s}})
		_ = c.IssuerDomain()
	})
}

// The walk to the relevant record set runs against a real DNS server.
func TestCheckCAAWalksUpAndFollowsCNAMEs(t *testing.T) {
	ctx := context.Background()
	zone, srv := memzone.NewTestServer(t, "example.com.")
	add := func(recs ...libdns.Record) {
		if _, err := zone.AppendRecords(ctx, "example.com.", recs); err != nil {
			t.Fatal(err)
		}
	}
	add(
		libdns.CAA{Name: "@", TTL: time.Minute, Tag: "issue", Value: "digicert.com"},
		libdns.CAA{Name: "ok", TTL: time.Minute, Tag: "issue", Value: "pebble.letsencrypt.org"},
		libdns.CNAME{Name: "alias", TTL: time.Minute, Target: "ok.example.com."},
	)
	for _, tc := range []struct {
		name, wantOwner string
		allowed         bool
	}{
		{"deep.sub.example.com", "example.com", false},
		{"ok.example.com", "ok.example.com", true},
		{"x.ok.example.com", "ok.example.com", true},
		{"alias.example.com", "ok.example.com", true},
		{"example.com", "example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := acme.CheckCAA(ctx, dnsresolver.New(srv.Addr()), tc.name, []string{"pebble.letsencrypt.org"})
			if err != nil {
				t.Fatal(err)
			}
			if v.Allowed != tc.allowed || v.Owner != tc.wantOwner {
				t.Fatalf("CheckCAA = %+v; want allowed %v at %s", v, tc.allowed, tc.wantOwner)
			}
		})
	}
	t.Run("a failing lookup is not a verdict", func(t *testing.T) {
		srv.FailWith("broken.example.com.", 2)
		_, err := acme.CheckCAA(ctx, dnsresolver.New(srv.Addr()), "broken.example.com", nil)
		if err == nil {
			t.Fatal("SERVFAIL gave a verdict")
		}
	})
}

// TestParseCAAReadsDNSResolver reads CAA records served by a real DNS
// server through dnsresolver, the resolver production wires in, and
// parses what it renders: flags, tag and value come back as they were
// published, quotes included.
func TestParseCAAReadsDNSResolver(t *testing.T) {
	ctx := context.Background()
	zone, srv := memzone.NewTestServer(t, "example.com.")
	for _, tc := range []struct {
		label string
		rec   libdns.CAA
		want  acme.CAA
	}{
		{"plain", libdns.CAA{Tag: "issue", Value: "ca.example"}, acme.CAA{Tag: "issue", Value: "ca.example"}},
		{"params", libdns.CAA{Tag: "issue", Value: "ca.example; validationmethods=dns-01"}, acme.CAA{Tag: "issue", Value: "ca.example; validationmethods=dns-01"}},
		{"critical", libdns.CAA{Flags: 128, Tag: "issuewild", Value: ";"}, acme.CAA{Flags: 128, Tag: "issuewild", Value: ";"}},
		{"quotes", libdns.CAA{Tag: "tbs", Value: `say "hi"`}, acme.CAA{Tag: "tbs", Value: `say "hi"`}},
		{"empty", libdns.CAA{Tag: "issue", Value: ""}, acme.CAA{Tag: "issue"}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			rec := tc.rec
			rec.Name, rec.TTL = tc.label, time.Minute
			if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{rec}); err != nil {
				t.Fatal(err)
			}
			recs, err := dnsresolver.New(srv.Addr()).Lookup(ctx, tc.label+".example.com", "CAA")
			if err != nil || len(recs) != 1 {
				t.Fatalf("Lookup = %+v, %v; want one record", recs, err)
			}
			got, err := acme.ParseCAA(recs[0].Value)
			if err != nil || got != tc.want {
				t.Fatalf("ParseCAA(%q) = %+v, %v; want %+v", recs[0].Value, got, err, tc.want)
			}
		})
	}
}
