package dnsresolver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/customdomain"
)

func TestLookup(t *testing.T) {
	ctx := context.Background()
	zone, srv := memzone.NewTestServer(t, "example.com.")
	var big []libdns.Record
	for i := range 300 { // well over 4096 octets: only TCP carries it
		big = append(big, libdns.Address{Name: "big", TTL: time.Hour, IP: netip.AddrFrom4([4]byte{10, 0, byte(i / 256), byte(i % 256)})})
	}
	recs := append([]libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "Edge.Petstore.Example."},
		libdns.Address{Name: "apex-ish", TTL: 300 * time.Second, IP: netip.MustParseAddr("203.0.113.9")},
		libdns.Address{Name: "apex-ish", TTL: 300 * time.Second, IP: netip.MustParseAddr("2001:db8::1")},
		libdns.CNAME{Name: "chain", TTL: time.Hour, Target: "apex-ish.example.com."},
		libdns.TXT{Name: "txt", TTL: time.Hour, Text: "hello"},
	}, big...)
	if _, err := zone.AppendRecords(ctx, "example.com.", recs); err != nil {
		t.Fatal(err)
	}
	srv.FailWith("broken.example.com.", dns.RcodeServerFailure)
	r := dnsresolver.New(srv.Addr())

	for _, tc := range []struct {
		name, typ string
		want      string
		failed    bool
	}{
		{"shop.example.com", "CNAME", "[CNAME shop.example.com edge.petstore.example 3600]", false},
		{"SHOP.example.com.", "cname", "[CNAME shop.example.com edge.petstore.example 3600]", false},
		{"shop.example.com", "A", "[]", false}, // the CNAME is not followed
		{"chain.example.com", "A", "[]", false},
		{"apex-ish.example.com", "A", "[A apex-ish.example.com 203.0.113.9 300]", false},
		{"apex-ish.example.com", "AAAA", "[AAAA apex-ish.example.com 2001:db8::1 300]", false},
		{"apex-ish.example.com", "CNAME", "[]", false}, // NODATA
		{"missing.example.com", "A", "[]", false},      // NXDOMAIN
		{"txt.example.com", "TXT", "[TXT txt.example.com hello 3600]", false},
		{"broken.example.com", "CNAME", "", true}, // SERVFAIL
		{"elsewhere.example.net", "A", "", true},  // REFUSED
	} {
		t.Run(tc.name+"/"+tc.typ, func(t *testing.T) {
			got, err := r.Lookup(ctx, tc.name, tc.typ)
			if tc.failed {
				if !errors.Is(err, customdomain.ErrLookupFailed) {
					t.Fatalf("Lookup = %v, %v; want an error wrapping ErrLookupFailed", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("Lookup returned nil, want an empty slice")
			}
			var s []string
			for _, r := range got {
				s = append(s, fmt.Sprintf("%s %s %s %d", r.Type, r.Name, r.Value, r.TTL))
			}
			if fmt.Sprint(s) != tc.want && !(tc.want == "[]" && len(s) == 0) {
				t.Fatalf("Lookup = %v, want %s", s, tc.want)
			}
		})
	}
	t.Run("TruncatedFallsBackToTCP", func(t *testing.T) {
		got, err := r.Lookup(ctx, "big.example.com", "A")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 300 {
			t.Fatalf("got %d A records, want all 300 (over TCP)", len(got))
		}
	})
	t.Run("FirstServerDownSecondAnswers", func(t *testing.T) {
		r := dnsresolver.New(silentServer(t), srv.Addr())
		r.Timeout = 200 * time.Millisecond
		got, err := r.Lookup(ctx, "shop.example.com", "CNAME")
		if err != nil || len(got) != 1 {
			t.Fatalf("Lookup = %v, %v; want the second server's answer", got, err)
		}
	})
	t.Run("TimeoutIsLookupFailed", func(t *testing.T) {
		r := dnsresolver.New(silentServer(t))
		r.Timeout = 100 * time.Millisecond
		_, err := r.Lookup(ctx, "shop.example.com", "CNAME")
		if !errors.Is(err, customdomain.ErrLookupFailed) {
			t.Fatalf("Lookup against a silent server = %v, want ErrLookupFailed", err)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := r.Lookup(cctx, "shop.example.com", "CNAME")
		if !errors.Is(err, customdomain.ErrLookupFailed) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Lookup with a cancelled context = %v, want ErrLookupFailed and context.Canceled", err)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, tc := range [][2]string{{"shop.example.com", "NOPE"}, {"a..b", "A"}} {
			if _, err := r.Lookup(ctx, tc[0], tc[1]); err == nil || errors.Is(err, customdomain.ErrLookupFailed) {
				t.Fatalf("Lookup(%q, %q) = %v, want an input error", tc[0], tc[1], err)
			}
		}
	})
}

// silentServer returns the address of a UDP socket that never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().String()
}

func TestNewDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"127.0.0.1:5353"}, "[127.0.0.1:5353]"},
		{[]string{"127.0.0.1", " ::1 ", ""}, "[127.0.0.1:53 [::1]:53]"},
		{[]string{"[::1]:5300"}, "[[::1]:5300]"},
	} {
		t.Run(fmt.Sprint(tc.in), func(t *testing.T) {
			if got := fmt.Sprint(dnsresolver.New(tc.in...).Servers()); got != tc.want {
				t.Fatalf("Servers() = %s, want %s", got, tc.want)
			}
		})
	}
	if len(dnsresolver.New().Servers()) == 0 {
		t.Fatal("New() has no servers")
	}
}

func BenchmarkLookup(b *testing.B) {
	zone, srv := memzone.NewTestServer(b, "example.com.")
	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.example."}}); err != nil {
		b.Fatal(err)
	}
	r := dnsresolver.New(srv.Addr())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Lookup(context.Background(), "shop.example.com", "CNAME"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUnicodeNameIsAskedInPunycode: DNS holds an internationalised name
// in its ASCII (punycode) form; a name given in Unicode, in any case, is
// asked in that form.
func TestUnicodeNameIsAskedInPunycode(t *testing.T) {
	zone, srv := memzone.NewTestServer(t, "xn--bcher-kva.example.")
	if _, err := zone.AppendRecords(context.Background(), "xn--bcher-kva.example.", []libdns.Record{
		libdns.CNAME{Name: "laden", TTL: time.Hour, Target: "edge.petstore.example."},
		libdns.TXT{Name: "_petstore-challenge.laden", TTL: time.Hour, Text: "token"},
	}); err != nil {
		t.Fatal(err)
	}
	r := dnsresolver.New(srv.Addr())
	for _, tc := range [][3]string{
		{"laden.bücher.example", "CNAME", "laden.xn--bcher-kva.example edge.petstore.example"},
		{"Laden.BÜCHER.example.", "CNAME", "laden.xn--bcher-kva.example edge.petstore.example"},
		{"_petstore-challenge.laden.bücher.example", "TXT", "_petstore-challenge.laden.xn--bcher-kva.example token"},
	} {
		got, err := r.Lookup(context.Background(), tc[0], tc[1])
		if err != nil || len(got) != 1 || got[0].Name+" "+got[0].Value != tc[2] {
			t.Fatalf("Lookup(%q, %s) = %+v, %v; want %s", tc[0], tc[1], got, err, tc[2])
		}
	}
}

// scriptedServer serves udp's answers over UDP and, when tcp is not nil,
// tcp's over TCP on the same port, on 127.0.0.1: a real DNS server that
// answers as badly as a test needs.
func scriptedServer(t *testing.T, udp, tcp dns.HandlerFunc) string {
	t.Helper()
	var servers []*dns.Server
	var pc net.PacketConn
	// The TCP port must be the one the kernel chose for UDP, and may be
	// taken: try a few.
	for range 10 {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		servers = []*dns.Server{{PacketConn: pc, Handler: udp}}
		if tcp == nil {
			break
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			servers = append(servers, &dns.Server{Listener: ln, Handler: tcp})
			break
		}
		pc.Close()
		servers = nil
	}
	if servers == nil {
		t.Fatal("no port free for both UDP and TCP")
	}
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go s.ActivateAndServe()
		<-started
		t.Cleanup(func() { s.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// manyA answers req with 100 A records.
func manyA(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for i := range 100 {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(10, 0, 0, byte(i))})
	}
	return m
}

// TestTruncatedMidRecordFallsBackToTCP: some servers truncate a UDP answer
// at 512 octets wherever that falls, inside a record, with the TC bit set
// and the counts of the whole answer; the answer is then asked over TCP.
func TestTruncatedMidRecordFallsBackToTCP(t *testing.T) {
	addr := scriptedServer(t, func(w dns.ResponseWriter, req *dns.Msg) {
		m := manyA(req)
		m.Truncated = true
		b, err := m.Pack()
		if err != nil {
			t.Error(err)
			return
		}
		w.Write(b[:dns.MinMsgSize])
	}, func(w dns.ResponseWriter, req *dns.Msg) { w.WriteMsg(manyA(req)) })
	got, err := dnsresolver.New(addr).Lookup(context.Background(), "shop.example.com", "A")
	if err != nil || len(got) != 100 {
		t.Fatalf("Lookup = %d records, %v; want the 100 records over TCP", len(got), err)
	}
}

// TestAnswerToAnotherQuestionIsLookupFailed: a server that answers another
// question than the one asked (its records owned by another name) says
// nothing about the name: "could not check", not "no records", and the
// next server is asked.
func TestAnswerToAnotherQuestionIsLookupFailed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(m *dns.Msg)
	}{
		{"other name", func(m *dns.Msg) { m.Question[0].Name = "other.example.com." }},
		{"other type", func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeTXT }},
		{"no question", func(m *dns.Msg) { m.Question = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			confused := scriptedServer(t, func(w dns.ResponseWriter, req *dns.Msg) {
				m := new(dns.Msg)
				m.SetReply(req)
				m.Authoritative = true
				tc.reply(m)
				w.WriteMsg(m)
			}, nil)
			if got, err := dnsresolver.New(confused).Lookup(context.Background(), "shop.example.com", "CNAME"); !errors.Is(err, customdomain.ErrLookupFailed) {
				t.Fatalf("Lookup = %v, %v; want an error wrapping ErrLookupFailed", got, err)
			}
			zone, srv := memzone.NewTestServer(t, "example.com.")
			if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.example."}}); err != nil {
				t.Fatal(err)
			}
			if got, err := dnsresolver.New(confused, srv.Addr()).Lookup(context.Background(), "shop.example.com", "CNAME"); err != nil || len(got) != 1 {
				t.Fatalf("Lookup = %v, %v; want the second server's CNAME", got, err)
			}
		})
	}
}

// TestReferralIsLookupFailed: a server that neither serves the zone nor
// recurses answers an empty NOERROR, often pointing at other nameservers.
// That is no answer about the name's records: "could not check", not "no
// records". A resolver's negative answer (with the zone's SOA, or from a
// server offering recursion) still means no records.
func TestReferralIsLookupFailed(t *testing.T) {
	ns, err := dns.NewRR("com. 172800 IN NS a.gtld-servers.net.")
	if err != nil {
		t.Fatal(err)
	}
	soa, err := dns.NewRR("example.com. 3600 IN SOA ns.example.com. hostmaster.example.com. 1 7200 900 1209600 300")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		recursion bool
		authority []dns.RR
		failed    bool
	}{
		{"referral", false, []dns.RR{ns}, true},
		{"referral from a resolver", true, []dns.RR{ns}, true},
		{"lame, empty", false, nil, true},
		{"resolver's NODATA", true, []dns.RR{soa}, false},
		{"resolver's NODATA without SOA", true, nil, false},
		{"NODATA with SOA", false, []dns.RR{soa}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := scriptedServer(t, func(w dns.ResponseWriter, req *dns.Msg) {
				m := new(dns.Msg)
				m.SetReply(req)
				m.RecursionAvailable = tc.recursion
				m.Ns = tc.authority
				w.WriteMsg(m)
			}, nil)
			got, err := dnsresolver.New(addr).Lookup(context.Background(), "shop.example.com", "CNAME")
			if tc.failed && !errors.Is(err, customdomain.ErrLookupFailed) || !tc.failed && (err != nil || len(got) != 0) {
				t.Fatalf("Lookup = %v, %v; want failed %v", got, err, tc.failed)
			}
		})
	}
}

// TestTXTValueIsTheText: a TXT record's value is its text as written, its
// strings joined (text over 255 bytes travels as several), without the
// escapes of the zone-file form: the diagnosis shows customers the value
// they typed, quotes and all.
func TestTXTValueIsTheText(t *testing.T) {
	zone, srv := memzone.NewTestServer(t, "example.com.")
	text := `"petstore-verify=abc" \ bücher ` + strings.Repeat("x", 300)
	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "_petstore-challenge.shop", TTL: time.Hour, Text: text}}); err != nil {
		t.Fatal(err)
	}
	got, err := dnsresolver.New(srv.Addr()).Lookup(context.Background(), "_petstore-challenge.shop.example.com", "TXT")
	if err != nil || len(got) != 1 || got[0].Value != text {
		t.Fatalf("Lookup = %+v, %v; want one record with value %q", got, err, text)
	}
}

// TestSlowServerWithinTimeout: a server that answers after more than two
// seconds, within the resolver's Timeout, is heard: its answer counts,
// not "could not check".
func TestSlowServerWithinTimeout(t *testing.T) {
	slow := func(w dns.ResponseWriter, req *dns.Msg) {
		time.Sleep(2500 * time.Millisecond)
		w.WriteMsg(manyA(req))
	}
	r := dnsresolver.New(scriptedServer(t, slow, nil))
	r.Timeout = time.Minute
	got, err := r.Lookup(context.Background(), "shop.example.com", "A")
	if err != nil || len(got) != 100 {
		t.Fatalf("Lookup = %d records, %v; want the slow server's 100 records", len(got), err)
	}
}

// TestSilentServerEndsWithTheContext: a lookup that a silent server holds
// returns when its context is cancelled (the check's caller gave up), not
// when the resolver's own Timeout runs out, and says it could not check.
func TestSilentServerEndsWithTheContext(t *testing.T) {
	r := dnsresolver.New(silentServer(t))
	r.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := r.Lookup(ctx, "shop.example.com", "CNAME")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, customdomain.ErrLookupFailed) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Lookup = %v, want ErrLookupFailed and context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after the context was cancelled")
	}
}

// TestAnswerOfOtherNamesIsLookupFailed: an answer to the right question
// whose records all belong to other names (a confused or poisoning
// server) says nothing about the name. Read as "no records", it would
// fail a domain whose records are right: it is "could not check", and
// the next server is asked.
func TestAnswerOfOtherNamesIsLookupFailed(t *testing.T) {
	liar := scriptedServer(t, func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.Answer = []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: "evil.example.com.", Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: "attacker.example."}}
		w.WriteMsg(m)
	}, nil)
	if got, err := dnsresolver.New(liar).Lookup(context.Background(), "shop.example.com", "CNAME"); !errors.Is(err, customdomain.ErrLookupFailed) {
		t.Fatalf("Lookup = %v, %v; want an error wrapping ErrLookupFailed", got, err)
	}
	zone, srv := memzone.NewTestServer(t, "example.com.")
	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.example."}}); err != nil {
		t.Fatal(err)
	}
	if got, err := dnsresolver.New(liar, srv.Addr()).Lookup(context.Background(), "shop.example.com", "CNAME"); err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %v, %v; want the second server's CNAME", got, err)
	}
}

// TestLostDatagramIsSentAgain: a query or answer lost on the way (UDP
// gives no notice) is asked again within the Timeout, as stub resolvers
// do, so one lost datagram is not a failed check.
func TestLostDatagramIsSentAgain(t *testing.T) {
	var mu sync.Mutex
	queries := 0
	lossy := scriptedServer(t, func(w dns.ResponseWriter, req *dns.Msg) {
		mu.Lock()
		queries++
		first := queries == 1
		mu.Unlock()
		if first {
			return // lost
		}
		w.WriteMsg(manyA(req))
	}, nil)
	r := dnsresolver.New(lossy)
	r.Timeout = 3 * time.Second
	got, err := r.Lookup(context.Background(), "shop.example.com", "A")
	if err != nil || len(got) != 100 {
		t.Fatalf("Lookup = %d records, %v; want the answer to the query sent again", len(got), err)
	}
}
