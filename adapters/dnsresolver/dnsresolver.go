// Package dnsresolver is a customdomain.Resolver that asks configured nameservers
// directly with github.com/miekg/dns. A platform points it at the
// authoritative servers (or a resolver it trusts) to skip caches, so a
// customer's fix shows at the next check; a test points it at its own
// server on 127.0.0.1.
package dnsresolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/dnsconv"
	"golang.org/x/net/idna"
)

// DefaultTimeout bounds one query to one server when the context has no
// earlier deadline.
const DefaultTimeout = 3 * time.Second

// Resolver asks its servers in order until one answers. It is safe for
// concurrent use.
type Resolver struct {
	servers []string
	// Timeout bounds one query to one server; DefaultTimeout when zero.
	Timeout time.Duration
}

var _ customdomain.Resolver = (*Resolver)(nil)

// New returns a resolver asking servers ("host:port" each; a bare host
// gets port 53). With none, it asks the nameservers of /etc/resolv.conf,
// or 127.0.0.1:53 when that cannot be read.
func New(servers ...string) *Resolver {
	var list []string
	for _, s := range servers {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "53")
		}
		list = append(list, s)
	}
	if len(list) == 0 {
		if conf, err := dns.ClientConfigFromFile("/etc/resolv.conf"); err == nil {
			for _, s := range conf.Servers {
				list = append(list, net.JoinHostPort(s, conf.Port))
			}
		}
	}
	if len(list) == 0 {
		list = []string{"127.0.0.1:53"}
	}
	return &Resolver{servers: list}
}

// Servers returns the nameservers the resolver asks, in order.
func (r *Resolver) Servers() []string { return append([]string(nil), r.servers...) }

// Lookup implements customdomain.Resolver: the records of type rrtype owned by
// exactly name, without following CNAMEs. An internationalised name may be
// given in Unicode ("laden.bücher.example"); records name it in ASCII. NXDOMAIN and NODATA give an empty
// slice; a timeout, SERVFAIL, REFUSED, a referral, an answer to another
// question or of only other names' records, or any other failure of every server gives an error wrapping
// customdomain.ErrLookupFailed.
func (r *Resolver) Lookup(ctx context.Context, name, rrtype string) ([]customdomain.Record, error) {
	qtype, ok := dns.StringToType[strings.ToUpper(rrtype)]
	if !ok {
		return nil, fmt.Errorf("dnsresolver: unknown record type %q", rrtype)
	}
	ascii, err := asciiName(strings.TrimSpace(name))
	if err != nil {
		return nil, fmt.Errorf("dnsresolver: %q is not a domain name: %w", name, err)
	}
	fqdn := dns.Fqdn(strings.ToLower(ascii))
	if _, ok := dns.IsDomainName(fqdn); !ok {
		return nil, fmt.Errorf("dnsresolver: %q is not a domain name", name)
	}
	q := new(dns.Msg)
	q.SetQuestion(fqdn, qtype)
	q.RecursionDesired = true
	q.SetEdns0(dns.DefaultMsgSize, false)

	var errs []error
	for _, server := range r.servers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s %s: %w", customdomain.ErrLookupFailed, name, rrtype, err)
		}
		resp, err := r.exchange(ctx, q, server)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", server, err))
			continue
		}
		switch {
		case referral(resp):
			errs = append(errs, fmt.Errorf("%s answered with a referral: it neither serves the zone nor recurses", server))
		case resp.Rcode == dns.RcodeSuccess, resp.Rcode == dns.RcodeNameError:
			return records(resp, fqdn, qtype), nil
		default:
			errs = append(errs, fmt.Errorf("%s answered %s", server, dns.RcodeToString[resp.Rcode]))
		}
	}
	return nil, fmt.Errorf("%w: %s %s: %w", customdomain.ErrLookupFailed, name, rrtype, errors.Join(errs...))
}

// asciiName gives each label of name that is not ASCII in its punycode
// (A-label) form, which is what DNS holds: "laden.bücher.example" is asked
// as "laden.xn--bcher-kva.example". ASCII labels stay as they are, so
// "_acme-challenge" and "*" pass.
func asciiName(name string) (string, error) {
	labels := strings.Split(name, ".")
	for i, l := range labels {
		if isASCII(l) {
			continue
		}
		a, err := idna.Lookup.ToASCII(l)
		if err != nil {
			return "", err
		}
		labels[i] = a
	}
	return strings.Join(labels, "."), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// exchange asks one server over UDP and again over TCP when the answer was
// truncated. A truncated answer may be cut anywhere, even inside a record,
// so that it does not unpack: its header's TC bit is enough to ask again.
func (r *Resolver) exchange(ctx context.Context, q *dns.Msg, server string) (*dns.Msg, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Without a Timeout of their own, miekg/dns clients give up reading
	// after two seconds whatever the context allows.
	udp := &dns.Client{Net: "udp", UDPSize: dns.DefaultMsgSize, Timeout: timeout}
	resp, err := ask(ctx, udp, q, server, udpTries)
	if resp != nil && resp.Id == q.Id && resp.Truncated {
		tcp := &dns.Client{Net: "tcp", Timeout: timeout}
		resp, err = ask(ctx, tcp, q, server, 1)
	}
	if err != nil {
		return nil, err
	}
	if resp.Id != q.Id {
		return nil, errors.New("answer does not match the query")
	}
	// An answer to another question (a confused or spoofing server) says
	// nothing about this one: taken as "no records", it would fail a
	// domain whose records are right.
	want := q.Question[0]
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, want.Name) ||
		resp.Question[0].Qtype != want.Qtype || resp.Question[0].Qclass != want.Qclass {
		return nil, errors.New("answer is for another question")
	}
	// So is an answer whose records are all of other names: a real one
	// starts with the name's own (its records, or the CNAME a chain
	// starts from, a wildcard's taking the name).
	if len(resp.Answer) > 0 && !slices.ContainsFunc(resp.Answer, func(rr dns.RR) bool { return strings.EqualFold(rr.Header().Name, want.Name) }) {
		return nil, errors.New("answer holds only records of other names")
	}
	return resp, nil
}

// udpTries is how many times a query is sent over UDP within the
// Timeout: a datagram lost either way gives no notice, and is sent again
// rather than failing the lookup. Answers to an earlier try still count.
const udpTries = 3

// ask exchanges q with server through c, sending it up to tries times on
// one socket, the time ctx leaves shared between them. miekg/dns heeds
// only the context's deadline: closing the connection is what stops an
// exchange when ctx is cancelled.
func ask(ctx context.Context, c *dns.Client, q *dns.Msg, server string, tries int) (*dns.Msg, error) {
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var resp *dns.Msg
	for i := range tries {
		try, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			try, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(tries-i))
		}
		resp, _, err = c.ExchangeWithConnContext(try, q, conn)
		cancel()
		var nerr net.Error
		if !errors.As(err, &nerr) || !nerr.Timeout() {
			break
		}
	}
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		return nil, ctxErr
	}
	return resp, err
}

// referral reports whether resp is an empty NOERROR that is not a "no
// such records" answer: not authoritative, without the SOA a negative
// answer carries, and either pointing at other nameservers or from a
// server that offers no recursion (a lame server, or one only
// authoritative for other zones).
func referral(resp *dns.Msg) bool {
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) > 0 || resp.Authoritative {
		return false
	}
	ns := false
	for _, rr := range resp.Ns {
		switch rr.Header().Rrtype {
		case dns.TypeSOA:
			return false
		case dns.TypeNS:
			ns = true
		}
	}
	return ns || !resp.RecursionAvailable
}

// records picks the answers of qtype owned by exactly fqdn: a server that
// chases a CNAME also returns the target's records, which are not ours.
func records(resp *dns.Msg, fqdn string, qtype uint16) []customdomain.Record {
	out := []customdomain.Record{}
	for _, rr := range resp.Answer {
		h := rr.Header()
		if h.Rrtype != qtype || !strings.EqualFold(h.Name, fqdn) {
			continue
		}
		rec := customdomain.Record{Type: dns.TypeToString[qtype], Name: strings.TrimSuffix(strings.ToLower(h.Name), "."), TTL: int(h.Ttl)}
		switch v := rr.(type) {
		case *dns.A:
			rec.Value = v.A.String()
		case *dns.AAAA:
			rec.Value = v.AAAA.String()
		case *dns.CNAME:
			rec.Value = strings.TrimSuffix(strings.ToLower(v.Target), ".")
		case *dns.CAA:
			rec.Value = fmt.Sprintf("%d %s %q", v.Flag, v.Tag, v.Value)
		case *dns.TXT:
			rec.Value = dnsconv.Text(v)
		default:
			rec.Value = strings.TrimPrefix(rr.String(), h.String())
		}
		out = append(out, rec)
	}
	return out
}
