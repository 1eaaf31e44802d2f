package acmetest

import (
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// Resolver starts, on loopback, what a CA's recursive resolver is to
// the authoritative servers of a test: each question goes to the server
// of the longest zone in upstreams that holds the name ("" for the rest),
// and a CNAME answer is followed to its target, wherever that is served.
// It answers UDP and TCP on one port (Pebble asks over TCP), stops when
// the test ends, and returns its address, which Options.DNSServer takes.
func Resolver(tb testing.TB, upstreams map[string]string) string {
	tb.Helper()
	// UDP and TCP on one port: Pebble asks over TCP.
	var pc net.PacketConn
	var ln net.Listener
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		if pc, err = net.ListenPacket("udp", l.Addr().String()); err == nil {
			ln = l
			break
		}
		l.Close()
	}
	if ln == nil {
		tb.Fatal("acmetest: no port free for both UDP and TCP")
	}
	upstream := func(name string) string {
		best, addr := -1, upstreams[""]
		for zone, a := range upstreams {
			if zone != "" && (name == zone+"." || strings.HasSuffix(name, "."+zone+".")) && len(zone) > best {
				best, addr = len(zone), a
			}
		}
		return addr
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		q := req.Question[0]
		out := new(dns.Msg)
		out.SetReply(req)
		out.RecursionAvailable = true
		name := strings.ToLower(q.Name)
		for hop := 0; hop < 8; hop++ {
			m := new(dns.Msg)
			m.SetQuestion(name, q.Qtype)
			r, err := dns.Exchange(m, upstream(name))
			if err != nil {
				out.Rcode = dns.RcodeServerFailure
				break
			}
			out.Rcode = r.Rcode
			out.Answer = append(out.Answer, r.Answer...)
			if len(out.Answer) == 0 {
				out.Ns = r.Ns // the SOA of a negative answer, which finds a zone
			}
			next := ""
			for _, rr := range r.Answer {
				if c, ok := rr.(*dns.CNAME); ok && q.Qtype != dns.TypeCNAME && strings.EqualFold(c.Hdr.Name, name) {
					next = strings.ToLower(c.Target)
				}
			}
			if next == "" || containsType(r.Answer, q.Qtype) {
				break
			}
			name = next
		}
		w.WriteMsg(out)
	})
	udp := &dns.Server{PacketConn: pc, Handler: handler}
	tcp := &dns.Server{Listener: ln, Handler: handler}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	tb.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return pc.LocalAddr().String()
}

func containsType(rrs []dns.RR, t uint16) bool {
	for _, rr := range rrs {
		if rr.Header().Rrtype == t {
			return true
		}
	}
	return false
}
