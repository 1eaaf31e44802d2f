package memzone

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Server answers DNS queries over UDP and TCP from a Provider's zones, as an
// authoritative server would, wildcards included (RFC 4592). Changes made through the provider are visible
// to the next query.
type Server struct {
	p    *Provider
	udp  *dns.Server
	tcp  *dns.Server
	addr string

	mu    sync.RWMutex
	fails map[string]int // canonical name -> rcode

	closeOnce sync.Once
	closeErr  error
}

// Serve starts a server for p's zones on addr (e.g. "127.0.0.1:0"), with UDP
// and TCP on the same port. It returns once both listen.
func (p *Provider) Serve(addr string) (*Server, error) {
	s := &Server{p: p, fails: map[string]int{}}
	// With port 0 the TCP port must match the UDP one the kernel chose, and
	// may be taken; try a few ports before giving up.
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 10 {
		pc, err = net.ListenPacket("udp", addr)
		if err != nil {
			return nil, fmt.Errorf("memzone: listen udp: %w", err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
		if _, port, _ := net.SplitHostPort(addr); port != "0" {
			return nil, fmt.Errorf("memzone: listen tcp: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("memzone: listen tcp: %w", err)
	}
	s.addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(s.serveDNS)
	var started sync.WaitGroup
	started.Add(2)
	s.udp = &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: started.Done}
	s.tcp = &dns.Server{Listener: ln, Handler: h, NotifyStartedFunc: started.Done,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	errs := make(chan error, 2)
	go func() { errs <- s.udp.ActivateAndServe() }()
	go func() { errs <- s.tcp.ActivateAndServe() }()
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
		return s, nil
	case err := <-errs:
		s.Close()
		return nil, fmt.Errorf("memzone: serve: %w", err)
	}
}

// NewTestServer returns a provider with zones added and a server for it on
// 127.0.0.1 with a free port, closed when tb's test ends.
func NewTestServer(tb testing.TB, zones ...string) (*Provider, *Server) {
	tb.Helper()
	p := New()
	for _, z := range zones {
		p.AddZone(z)
	}
	s, err := p.Serve("127.0.0.1:0")
	if err != nil {
		tb.Fatalf("memzone: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return p, s
}

// Addr returns the address the server listens on, "127.0.0.1:PORT", for both
// UDP and TCP.
func (s *Server) Addr() string { return s.addr }

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
	})
	return s.closeErr
}

// FailWith makes every query for name (any type) answer rcode, e.g.
// dns.RcodeServerFailure or dns.RcodeRefused, to test how callers handle a
// broken DNS. Rcode 0 (NOERROR) clears it and normal answers resume.
func (s *Server) FailWith(name string, rcode int) {
	name = dns.CanonicalName(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rcode == dns.RcodeSuccess {
		delete(s.fails, name)
		return
	}
	s.fails[name] = rcode
}

func (s *Server) serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	resp := s.answer(req)
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size) // sets TC so the client retries over TCP
	}
	_ = w.WriteMsg(resp)
}

// answer builds the response to req.
func (s *Server) answer(req *dns.Msg) *dns.Msg {
	resp := new(dns.Msg)
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		resp.SetRcode(req, dns.RcodeNotImplemented)
		if len(req.Question) != 1 {
			resp.Rcode = dns.RcodeFormatError
		}
		return resp
	}
	resp.SetReply(req)
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(max(opt.UDPSize(), dns.MinMsgSize), false)
	}
	q := req.Question[0]
	qname := dns.CanonicalName(q.Name)

	s.mu.RLock()
	rcode, failing := s.fails[qname]
	s.mu.RUnlock()
	if failing {
		resp.Rcode = rcode
		return resp
	}
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		resp.Rcode = dns.RcodeRefused
		return resp
	}

	p := s.p
	p.mu.RLock()
	defer p.mu.RUnlock()
	z := p.findZone(qname)
	if z == nil {
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	if q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		// Transfers are for the libdns API, not this server.
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	resp.Authoritative = true

	name := qname
	seen := map[string]bool{}
	for {
		seen[name] = true
		rrs, exists := z.lookup(name)
		if !exists {
			rrs, exists = z.wildcard(name)
		}
		if !exists {
			resp.Rcode = dns.RcodeNameError
			resp.Ns = []dns.RR{dns.Copy(z.soa)}
			return resp
		}
		var matched []dns.RR
		var cname *dns.CNAME
		for _, rr := range rrs {
			if c, ok := rr.(*dns.CNAME); ok {
				cname = c
			}
			if q.Qtype == dns.TypeANY || rr.Header().Rrtype == q.Qtype {
				matched = append(matched, answerCopy(rr, owner(q.Name, name, qname)))
			}
		}
		if len(matched) > 0 {
			resp.Answer = append(resp.Answer, matched...)
			return resp
		}
		if cname == nil {
			resp.Ns = []dns.RR{dns.Copy(z.soa)} // NODATA
			return resp
		}
		// A CNAME answers every type; chase it while it stays in our zones.
		resp.Answer = append(resp.Answer, answerCopy(cname, owner(q.Name, name, qname)))
		next := dns.CanonicalName(cname.Target)
		nz := p.findZone(next)
		if nz == nil || seen[next] || len(seen) > 8 {
			return resp
		}
		z, name = nz, next
	}
}

// answerCopy copies rr for an answer owned by name: the name asked about,
// which a wildcard's records take (RFC 4592).
func answerCopy(rr dns.RR, name string) dns.RR {
	c := dns.Copy(rr)
	c.Header().Name = name
	return c
}

// owner is the owner of the answers for name: the queried name in the case
// the client asked in (some resolvers check it, 0x20 randomisation), or
// name itself along a CNAME chain.
func owner(asked, name, qname string) string {
	if name == qname {
		return asked
	}
	return name
}

// wildcard returns the records a wildcard synthesises for name, which does
// not exist (RFC 4592): those of "*." + its closest encloser, the nearest
// ancestor that exists. The second result is false when there is none.
func (z *zone) wildcard(name string) ([]dns.RR, bool) {
	for ancestor := name; ancestor != z.name; {
		_, parent, ok := strings.Cut(ancestor, ".")
		if !ok || !dns.IsSubDomain(z.name, parent) {
			return nil, false
		}
		ancestor = parent
		if _, exists := z.lookup(ancestor); exists {
			return z.lookup("*." + ancestor)
		}
	}
	return nil, false
}

// findZone returns the closest enclosing zone of name; the caller holds p.mu.
func (p *Provider) findZone(name string) *zone {
	for {
		if z, ok := p.zones[name]; ok {
			return z
		}
		if name == "." {
			return nil
		}
		i := strings.IndexByte(name, '.')
		if i < 0 || i == len(name)-1 {
			name = "."
		} else {
			name = name[i+1:]
		}
	}
}

// lookup returns the records owned by name and whether the name exists: it
// does when it owns records or is an empty non-terminal (a name below it
// owns records), which answers NODATA rather than NXDOMAIN (RFC 8020).
func (z *zone) lookup(name string) ([]dns.RR, bool) {
	var out []dns.RR
	exists := false
	if name == z.name {
		out = append(out, z.soa)
		exists = true
	}
	suffix := "." + name
	for _, rr := range z.records {
		owner := rr.Header().Name
		if owner == name {
			out = append(out, rr)
			exists = true
		} else if strings.HasSuffix(owner, suffix) {
			exists = true
		}
	}
	return out, exists
}
