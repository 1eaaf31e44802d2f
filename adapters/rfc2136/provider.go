package rfc2136

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"

	"github.com/petstorekit/petstore/internal/dnsconv"
	"github.com/petstorekit/petstore/internal/redact"
)

// Provider reads and writes zones on an authoritative server with RFC 2136
// dynamic updates and AXFR, both signed with TSIG. Fill in the fields and
// use it; it is safe for concurrent use. The server must allow the key to
// update and transfer the zone (BIND: allow-update/allow-transfer; Knot: an
// ACL with action [update, transfer]; PowerDNS: ALLOW-DNSUPDATE-FROM,
// TSIG-ALLOW-DNSUPDATE and TSIG-ALLOW-AXFR metadata).
//
// Names in data (CNAME, MX, NS targets) are fully qualified whether or not
// they end in a dot. The SOA and DNSSEC records are left out of GetRecords
// and cannot be written.
type Provider struct {
	// Server is the primary's "host:port", e.g. "127.0.0.1:53".
	Server string `json:"server"`
	// KeyName is the TSIG key's name, e.g. "petstore-update.".
	KeyName string `json:"key_name"`
	// KeyAlgorithm is the TSIG algorithm: "hmac-sha256" (the default),
	// "hmac-sha512", "hmac-sha384", "hmac-sha224" or "hmac-sha1".
	KeyAlgorithm string `json:"key_algorithm,omitempty"`
	// KeySecret is the TSIG secret, base64 encoded as in BIND and Knot
	// configuration files. Keep it out of logs: a *Provider printed
	// (fmt's verbs, slog) shows it masked.
	KeySecret string `json:"key_secret"`
	// Timeout bounds each exchange with the server when ctx has no earlier
	// deadline; zero means 10 seconds.
	Timeout time.Duration `json:"timeout,omitempty"`

	// mu serialises the read-modify-write of DeleteRecords within this
	// provider so two deletions do not race on a stale transfer.
	mu sync.Mutex
}

var (
	_ libdns.RecordGetter   = (*Provider)(nil)
	_ libdns.RecordAppender = (*Provider)(nil)
	_ libdns.RecordSetter   = (*Provider)(nil)
	_ libdns.RecordDeleter  = (*Provider)(nil)
)

// String describes p with its KeySecret masked, so that a provider
// printed in a log line or an error does not show the secret, as fmt
// would print every field otherwise.
func (p *Provider) String() string {
	secret := ""
	if p.KeySecret != "" {
		secret = redact.Mask
	}
	return fmt.Sprintf("{Server:%s KeyName:%s KeyAlgorithm:%s KeySecret:%s Timeout:%v}", p.Server, p.KeyName, p.KeyAlgorithm, secret, p.Timeout)
}

// GoString is String, for %#v.
func (p *Provider) GoString() string { return "rfc2136.Provider" + p.String() }

// LogValue is String, for slog handlers (JSON among them) that would
// otherwise log the fields.
func (p *Provider) LogValue() slog.Value { return slog.StringValue(p.String()) }

// ErrRcode is wrapped by errors for an UPDATE or transfer the server
// answered with an error code (REFUSED, NOTAUTH, SERVFAIL ...).
var ErrRcode = errors.New("rfc2136: server refused")

// GetRecords implements libdns.RecordGetter with a TSIG-signed AXFR.
func (p *Provider) GetRecords(ctx context.Context, zone string) ([]libdns.Record, error) {
	rrs, err := p.transfer(ctx, zone)
	if err != nil {
		return nil, err
	}
	out := make([]libdns.Record, 0, len(rrs))
	for _, rr := range rrs {
		rec, err := dnsconv.FromDNS(zone, rr)
		if err != nil {
			return nil, fmt.Errorf("rfc2136: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// AppendRecords implements libdns.RecordAppender with one UPDATE that adds
// the records. Servers ignore an added record identical to an existing one,
// and some (Knot) silently ignore a CNAME added next to other data: read
// the zone back when that matters.
func (p *Provider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	rrs, err := toRRs(zone, recs)
	if err != nil {
		return nil, err
	}
	m := newUpdate(zone)
	m.Insert(rrs)
	if err := p.update(ctx, m); err != nil {
		return nil, err
	}
	return fromRRs(zone, rrs)
}

// SetRecords implements libdns.RecordSetter with one UPDATE that deletes
// each input (name, type) RRset and adds the given records. RFC 2136 applies
// an UPDATE all or nothing, so an error from the server (wrapping ErrRcode)
// is a libdns.AtomicErr: the zone is unchanged.
func (p *Provider) SetRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	rrs, err := toRRs(zone, recs)
	if err != nil {
		return nil, err
	}
	m := newUpdate(zone)
	var sets []dns.RR
	for _, rr := range rrs {
		h := rr.Header()
		if !slices.ContainsFunc(sets, func(s dns.RR) bool { return s.Header().Name == h.Name && s.Header().Rrtype == h.Rrtype }) {
			sets = append(sets, rr)
		}
	}
	m.RemoveRRset(sets)
	m.Insert(rrs)
	if err := p.update(ctx, m); err != nil {
		if errors.Is(err, ErrRcode) {
			return nil, libdns.AtomicErr(err)
		}
		return nil, err
	}
	return fromRRs(zone, rrs)
}

// DeleteRecords implements libdns.RecordDeleter: it transfers the zone to
// find the matching records (empty Type, zero TTL or empty data match any)
// and removes exactly those in one UPDATE.
func (p *Provider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	matches := make([]func(dns.RR) bool, 0, len(recs))
	for _, rec := range recs {
		m, err := dnsconv.Matcher(zone, rec)
		if err != nil {
			return nil, fmt.Errorf("rfc2136: %w", err)
		}
		matches = append(matches, m)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	all, err := p.transfer(ctx, zone)
	if err != nil {
		return nil, err
	}
	var doomed []dns.RR
	for _, rr := range all {
		if slices.ContainsFunc(matches, func(m func(dns.RR) bool) bool { return m(rr) }) {
			doomed = append(doomed, rr)
		}
	}
	if len(doomed) == 0 {
		return []libdns.Record{}, nil
	}
	deleted, err := fromRRs(zone, doomed)
	if err != nil {
		return nil, err
	}
	m := newUpdate(zone)
	m.Remove(doomed) // rewrites class and TTL in place: convert first
	if err := p.update(ctx, m); err != nil {
		return nil, err
	}
	return deleted, nil
}

func newUpdate(zone string) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(dns.CanonicalName(zone))
	return m
}

func toRRs(zone string, recs []libdns.Record) ([]dns.RR, error) {
	out := make([]dns.RR, 0, len(recs))
	for _, rec := range recs {
		rr, err := dnsconv.ToDNS(zone, rec)
		if err != nil {
			return nil, fmt.Errorf("rfc2136: %w", err)
		}
		out = append(out, rr)
	}
	return out, nil
}

func fromRRs(zone string, rrs []dns.RR) ([]libdns.Record, error) {
	out := make([]libdns.Record, 0, len(rrs))
	for _, rr := range rrs {
		rec, err := dnsconv.FromDNS(zone, dnsconv.RoundTrip(rr))
		if err != nil {
			return nil, fmt.Errorf("rfc2136: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// tsigAlgorithms are the TSIG algorithms KeyAlgorithm may name, the
// default first, with miekg/dns's name of each.
var tsigAlgorithms = []struct{ name, dns string }{
	{"hmac-sha256", dns.HmacSHA256},
	{"hmac-sha512", dns.HmacSHA512},
	{"hmac-sha384", dns.HmacSHA384},
	{"hmac-sha224", dns.HmacSHA224},
	{"hmac-sha1", dns.HmacSHA1},
}

// Algorithms returns the TSIG algorithms KeyAlgorithm may name, the
// default first.
func Algorithms() []string {
	names := make([]string, len(tsigAlgorithms))
	for i, a := range tsigAlgorithms {
		names[i] = a.name
	}
	return names
}

// CheckAlgorithm returns an error, naming the algorithms there are, when
// KeyAlgorithm is none of them: every signed exchange would fail. A
// program configuring p calls it at start, so that a typo shows then
// rather than at the first write.
func (p *Provider) CheckAlgorithm() error {
	_, err := p.algorithm()
	return err
}

func (p *Provider) algorithm() (string, error) {
	alg := strings.ToLower(strings.TrimSuffix(p.KeyAlgorithm, "."))
	if alg == "" {
		return tsigAlgorithms[0].dns, nil
	}
	for _, a := range tsigAlgorithms {
		if alg == a.name {
			return a.dns, nil
		}
	}
	return "", fmt.Errorf("rfc2136: unsupported TSIG algorithm %q: want one of %s", p.KeyAlgorithm, strings.Join(Algorithms(), ", "))
}

// sign adds a TSIG record to m and returns the secrets map miekg/dns needs
// to sign and verify it. Without a key, messages go unsigned.
func (p *Provider) sign(m *dns.Msg) (map[string]string, error) {
	if p.KeyName == "" {
		return nil, nil
	}
	alg, err := p.algorithm()
	if err != nil {
		return nil, err
	}
	name := dns.CanonicalName(p.KeyName)
	m.SetTsig(name, alg, 300, time.Now().Unix())
	return map[string]string{name: p.KeySecret}, nil
}

// timeout is p.Timeout, or 10 seconds when zero.
func (p *Provider) timeout() time.Duration {
	if p.Timeout <= 0 {
		return 10 * time.Second
	}
	return p.Timeout
}

func (p *Provider) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout())
}

// update sends m over TCP (updates can be large, and TCP avoids resending
// a non-idempotent message on a lost UDP reply) and checks the answer.
func (p *Provider) update(ctx context.Context, m *dns.Msg) error {
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	secrets, err := p.sign(m)
	if err != nil {
		return err
	}
	// Without a Timeout of its own, miekg/dns gives up reading after two
	// seconds whatever the context allows.
	c := &dns.Client{Net: "tcp", TsigSecret: secrets, Timeout: p.timeout()}
	conn, err := c.DialContext(ctx, p.Server)
	if err != nil {
		return fmt.Errorf("rfc2136: update %s at %s: %w", m.Question[0].Name, p.Server, err)
	}
	defer conn.Close()
	// miekg/dns heeds only the context's deadline: closing the connection
	// is what stops an exchange when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(ctx, m, conn)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("rfc2136: update %s at %s: %w", m.Question[0].Name, p.Server, ctx.Err())
	case resp != nil && resp.Rcode != dns.RcodeSuccess:
		// Checked before err: a server that rejects the key cannot sign
		// its answer, which then fails verification.
		return p.refused("update", m.Question[0].Name, resp)
	case err != nil:
		return fmt.Errorf("rfc2136: update %s at %s: %w", m.Question[0].Name, p.Server, err)
	}
	return nil
}

// refused is the error for an answer with an error rcode: the rcode and,
// for a key the server rejected, the TSIG error (BADSIG: wrong secret or
// algorithm; BADKEY: unknown key; BADTIME: clocks apart) and the key's
// name, never its secret.
func (p *Provider) refused(op, zone string, resp *dns.Msg) error {
	why := dns.RcodeToString[resp.Rcode]
	if t := resp.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
		why += fmt.Sprintf(" (TSIG %s for key %s)", dns.RcodeToString[int(t.Error)], dns.CanonicalName(p.KeyName))
	}
	return fmt.Errorf("%w %s of %s: %s", ErrRcode, op, zone, why)
}

// transfer returns the zone's records without the SOA and DNSSEC records.
func (p *Provider) transfer(ctx context.Context, zone string) ([]dns.RR, error) {
	zone = dns.CanonicalName(zone)
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	m := new(dns.Msg)
	m.SetAxfr(zone)
	secrets, err := p.sign(m)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.Server)
	if err != nil {
		return nil, fmt.Errorf("rfc2136: transfer %s from %s: %w", zone, p.Server, err)
	}
	// miekg/dns transfers take no context: closing the connection is what
	// stops one when ctx ends.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	first := &firstAnswer{Conn: conn}
	t := &dns.Transfer{Conn: &dns.Conn{Conn: first}, TsigSecret: secrets}
	if dl, ok := ctx.Deadline(); ok {
		t.ReadTimeout = time.Until(dl)
	}
	envs, err := t.In(m, p.Server)
	if err != nil {
		conn.Close()
		return nil, p.transferErr(ctx, zone, first, err)
	}
	var out []dns.RR
	var failed error
	for env := range envs {
		if env.Error != nil {
			failed = env.Error
			continue // drain: In's goroutine closes the channel
		}
		for _, rr := range env.RR {
			switch rr.Header().Rrtype {
			case dns.TypeSOA, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM,
				dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY, dns.TypeTSIG:
				continue
			}
			out = append(out, rr)
		}
	}
	if failed != nil {
		return nil, p.transferErr(ctx, zone, first, failed)
	}
	return out, nil
}

func (p *Provider) transferErr(ctx context.Context, zone string, first *firstAnswer, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("rfc2136: transfer %s from %s: %w", zone, p.Server, ctxErr)
	}
	if resp := first.msg(); resp != nil && resp.Rcode != dns.RcodeSuccess {
		return p.refused("transfer", zone, resp)
	}
	return fmt.Errorf("rfc2136: transfer %s from %s: %w", zone, p.Server, err)
}

// firstAnswer keeps what is read of a transfer's first message: when the
// server refuses (an unknown zone, a rejected key) it cannot sign that
// answer, and miekg/dns reports only the failed verification, not the
// rcode that says why.
type firstAnswer struct {
	net.Conn
	buf []byte
}

func (f *firstAnswer) Read(b []byte) (int, error) {
	n, err := f.Conn.Read(b)
	if len(f.buf) < 2+dns.MaxMsgSize {
		f.buf = append(f.buf, b[:n]...)
	}
	return n, err
}

// msg returns the first message (TCP: a two-octet length, then the
// message), or nil when it was not all read or does not unpack.
func (f *firstAnswer) msg() *dns.Msg {
	if len(f.buf) < 2 {
		return nil
	}
	n := 2 + int(binary.BigEndian.Uint16(f.buf))
	m := new(dns.Msg)
	if len(f.buf) < n || m.Unpack(f.buf[2:n]) != nil {
		return nil
	}
	return m
}
