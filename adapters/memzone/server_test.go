package memzone_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/memzone"
)

// query asks the server one question over net ("udp" or "tcp").
func query(t *testing.T, s *memzone.Server, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	resp, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return resp
}

// rdata lists the answer section as "TYPE data" strings.
func rdata(rrs []dns.RR) []string {
	out := []string{}
	for _, rr := range rrs {
		h := rr.Header()
		out = append(out, h.Name+" "+dns.TypeToString[h.Rrtype]+" "+strings.TrimSpace(strings.TrimPrefix(rr.String(), h.String())))
	}
	return out
}

func newZone(t *testing.T) (*memzone.Provider, *memzone.Server) {
	t.Helper()
	p, s := memzone.NewTestServer(t, "example.com.", "example.net")
	recs := []libdns.Record{
		libdns.Address{Name: "@", TTL: time.Hour, IP: netip.MustParseAddr("192.0.2.1")},
		libdns.Address{Name: "www", TTL: time.Minute, IP: netip.MustParseAddr("192.0.2.2")},
		libdns.Address{Name: "www", TTL: time.Minute, IP: netip.MustParseAddr("2001:db8::2")},
		libdns.CNAME{Name: "shop", TTL: time.Minute, Target: "www.example.com."},
		libdns.CNAME{Name: "away", TTL: time.Minute, Target: "hosting.example.org"},
		libdns.CNAME{Name: "cross", TTL: time.Minute, Target: "api.example.net."},
		libdns.CAA{Name: "@", TTL: time.Hour, Flags: 0, Tag: "issue", Value: "letsencrypt.org"},
		libdns.CAA{Name: "@", TTL: time.Hour, Flags: 128, Tag: "tbs", Value: "x"},
		libdns.TXT{Name: "_verify", TTL: time.Minute, Text: `token "quoted" \ ` + strings.Repeat("x", 300)},
		libdns.TXT{Name: "a.b.deep", TTL: time.Minute, Text: "deep"},
		libdns.CNAME{Name: "*.app", TTL: time.Minute, Target: "www.example.com."},
		libdns.Address{Name: "real.app", TTL: time.Minute, IP: netip.MustParseAddr("192.0.2.3")},
		libdns.CNAME{Name: "towild", TTL: time.Minute, Target: "z.app.example.com."},
	}
	if _, err := p.AppendRecords(context.Background(), "example.com.", recs); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendRecords(context.Background(), "example.net.", []libdns.Record{
		libdns.Address{Name: "api", TTL: time.Minute, IP: netip.MustParseAddr("198.51.100.7")},
	}); err != nil {
		t.Fatal(err)
	}
	return p, s
}

func TestServerAnswers(t *testing.T) {
	_, s := newZone(t)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		rcode   int
		answer  []string
		soaInNs bool
		aa      bool
	}{
		{"apex A", "example.com", dns.TypeA, dns.RcodeSuccess, []string{"example.com. A 192.0.2.1"}, false, true},
		{"A", "www.example.com", dns.TypeA, dns.RcodeSuccess, []string{"www.example.com. A 192.0.2.2"}, false, true},
		{"AAAA", "www.example.com", dns.TypeAAAA, dns.RcodeSuccess, []string{"www.example.com. AAAA 2001:db8::2"}, false, true},
		{"case kept", "WWW.Example.COM", dns.TypeA, dns.RcodeSuccess, []string{"WWW.Example.COM. A 192.0.2.2"}, false, true},
		{"CNAME chased", "shop.example.com", dns.TypeA, dns.RcodeSuccess,
			[]string{"shop.example.com. CNAME www.example.com.", "www.example.com. A 192.0.2.2"}, false, true},
		{"CNAME asked", "shop.example.com", dns.TypeCNAME, dns.RcodeSuccess, []string{"shop.example.com. CNAME www.example.com."}, false, true},
		{"CNAME for CAA", "shop.example.com", dns.TypeCAA, dns.RcodeSuccess, []string{"shop.example.com. CNAME www.example.com."}, true, true},
		{"CNAME out of zones", "away.example.com", dns.TypeA, dns.RcodeSuccess, []string{"away.example.com. CNAME hosting.example.org."}, false, true},
		{"CNAME across zones", "cross.example.com", dns.TypeA, dns.RcodeSuccess,
			[]string{"cross.example.com. CNAME api.example.net.", "api.example.net. A 198.51.100.7"}, false, true},
		{"CAA", "example.com", dns.TypeCAA, dns.RcodeSuccess,
			[]string{`example.com. CAA 0 issue "letsencrypt.org"`, `example.com. CAA 128 tbs "x"`}, false, true},
		{"SOA", "example.com", dns.TypeSOA, dns.RcodeSuccess,
			[]string{"example.com. SOA ns1.example.com. hostmaster.example.com. 2 3600 600 86400 60"}, false, true},
		{"NS", "example.com", dns.TypeNS, dns.RcodeSuccess, []string{"example.com. NS ns1.example.com."}, false, true},
		{"NXDOMAIN", "nope.example.com", dns.TypeA, dns.RcodeNameError, []string{}, true, true},
		{"NODATA", "www.example.com", dns.TypeTXT, dns.RcodeSuccess, []string{}, true, true},
		{"empty non-terminal", "b.deep.example.com", dns.TypeA, dns.RcodeSuccess, []string{}, true, true},
		{"wildcard", "a.app.example.com", dns.TypeCNAME, dns.RcodeSuccess, []string{"a.app.example.com. CNAME www.example.com."}, false, true},
		{"wildcard chased", "A.App.example.com", dns.TypeA, dns.RcodeSuccess,
			[]string{"A.App.example.com. CNAME www.example.com.", "www.example.com. A 192.0.2.2"}, false, true},
		{"wildcard any depth", "x.y.app.example.com", dns.TypeCNAME, dns.RcodeSuccess, []string{"x.y.app.example.com. CNAME www.example.com."}, false, true},
		{"wildcard at the end of a chain", "towild.example.com", dns.TypeA, dns.RcodeSuccess,
			[]string{"towild.example.com. CNAME z.app.example.com.", "z.app.example.com. CNAME www.example.com.", "www.example.com. A 192.0.2.2"}, false, true},
		{"wildcard asked", "*.app.example.com", dns.TypeCNAME, dns.RcodeSuccess, []string{"*.app.example.com. CNAME www.example.com."}, false, true},
		{"no wildcard over a name", "real.app.example.com", dns.TypeCNAME, dns.RcodeSuccess, []string{}, true, true},
		{"no wildcard of another level", "app.example.com", dns.TypeA, dns.RcodeSuccess, []string{}, true, true},
		{"REFUSED", "example.org", dns.TypeA, dns.RcodeRefused, []string{}, false, false},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				resp := query(t, s, network, tt.qname, tt.qtype)
				if got, want := resp.Rcode, tt.rcode; got != want {
					t.Fatalf("rcode = %s, want %s", dns.RcodeToString[got], dns.RcodeToString[want])
				}
				if got, want := rdata(resp.Answer), tt.answer; !slices.Equal(got, want) {
					t.Fatalf("answer = %q, want %q", got, want)
				}
				if got := resp.Authoritative; got != tt.aa {
					t.Fatalf("AA = %v, want %v", got, tt.aa)
				}
				hasSOA := len(resp.Ns) == 1 && resp.Ns[0].Header().Rrtype == dns.TypeSOA
				if hasSOA != tt.soaInNs {
					t.Fatalf("authority = %v, want SOA: %v", resp.Ns, tt.soaInNs)
				}
			})
		}
	}
}

func TestServerTXTIsUnescapedAndSplit(t *testing.T) {
	_, s := newZone(t)
	resp := query(t, s, "tcp", "_verify.example.com", dns.TypeTXT)
	if len(resp.Answer) != 1 {
		t.Fatalf("answer = %v, want one TXT", resp.Answer)
	}
	txt := resp.Answer[0].(*dns.TXT).Txt
	if got, want := len(txt), 2; got != want {
		t.Fatalf("%d character-strings, want %d (300+ bytes split at 255)", got, want)
	}
	if !strings.HasPrefix(txt[0], `token \"quoted\" \\ x`) {
		t.Fatalf("first string = %q", txt[0])
	}
}

func TestServerLargeAnswerTruncatesOverUDP(t *testing.T) {
	p, s := memzone.NewTestServer(t, "example.com")
	var recs []libdns.Record
	for i := range 40 {
		recs = append(recs, libdns.TXT{Name: "big", Text: strings.Repeat(string(rune('a'+i%26)), 60) + string(rune('0'+i%10)) + strings.Repeat("z", i)})
	}
	if _, err := p.AppendRecords(context.Background(), "example.com", recs); err != nil {
		t.Fatal(err)
	}
	if resp := query(t, s, "udp", "big.example.com", dns.TypeTXT); !resp.Truncated {
		t.Fatalf("UDP answer of %d records not truncated", len(resp.Answer))
	}
	if resp := query(t, s, "tcp", "big.example.com", dns.TypeTXT); resp.Truncated || len(resp.Answer) != 40 {
		t.Fatalf("TCP answer: truncated=%v, %d records, want 40", resp.Truncated, len(resp.Answer))
	}
}

func TestServerFailWith(t *testing.T) {
	_, s := newZone(t)
	tests := []struct {
		name  string
		rcode int
	}{
		{"SERVFAIL", dns.RcodeServerFailure},
		{"REFUSED", dns.RcodeRefused},
		{"cleared", dns.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.FailWith("WWW.example.com", tt.rcode)
			for _, network := range []string{"udp", "tcp"} {
				for _, qtype := range []uint16{dns.TypeA, dns.TypeCAA} {
					if got := query(t, s, network, "www.example.com", qtype).Rcode; got != tt.rcode {
						t.Fatalf("%s %s rcode = %s, want %s", network, dns.TypeToString[qtype], dns.RcodeToString[got], dns.RcodeToString[tt.rcode])
					}
				}
			}
			if got := query(t, s, "udp", "example.com", dns.TypeA).Rcode; got != dns.RcodeSuccess {
				t.Fatalf("other name rcode = %s, want NOERROR", dns.RcodeToString[got])
			}
		})
	}
}

func TestServerSeesChangesAtOnce(t *testing.T) {
	p, s := newZone(t)
	ctx := context.Background()
	if _, err := p.SetRecords(ctx, "example.com", []libdns.Record{
		libdns.Address{Name: "www", TTL: time.Minute, IP: netip.MustParseAddr("192.0.2.99")},
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := rdata(query(t, s, "udp", "www.example.com", dns.TypeA).Answer), []string{"www.example.com. A 192.0.2.99"}; !slices.Equal(got, want) {
		t.Fatalf("after set: %q, want %q", got, want)
	}
	if _, err := p.DeleteRecords(ctx, "example.com", []libdns.Record{libdns.RR{Name: "www"}}); err != nil {
		t.Fatal(err)
	}
	if got := query(t, s, "udp", "www.example.com", dns.TypeA).Rcode; got != dns.RcodeNameError {
		t.Fatalf("after delete: rcode %s, want NXDOMAIN", dns.RcodeToString[got])
	}
}

func TestServerCloseTwice(t *testing.T) {
	p := memzone.New()
	s, err := p.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
