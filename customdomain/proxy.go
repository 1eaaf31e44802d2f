package customdomain

import (
	"bufio"
	"context"
	_ "embed" // cdn-ranges.txt
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/petstorekit/petstore/internal/netguard"
)

// ChallengePath is the path the HTTP ownership check fetches over a
// customer's host name: the edge answers it, for a custom domain that is
// not removed, with the domain's token (Engine.ChallengeToken), so a check
// that gets the token back through a proxy has reached this platform.
const ChallengePath = "/.well-known/petstore-challenge"

// probeTimeout bounds one HTTP ownership check.
const probeTimeout = 5 * time.Second

// CDN is a content delivery network (or proxying DNS provider) and the
// address ranges it answers from.
type CDN struct {
	Name     string
	Prefixes []netip.Prefix
}

//go:embed cdn-ranges.txt
var cdnRanges string

// DefaultCDNs returns the ranges of the large CDNs listed in the engine's
// embedded cdn-ranges.txt, the default of EngineConfig.CDNs.
func DefaultCDNs() []CDN {
	cdns, err := ParseCDNs(strings.NewReader(cdnRanges))
	if err != nil {
		panic("customdomain: the embedded cdn-ranges.txt is invalid: " + err.Error())
	}
	return cdns
}

// ParseCDNs reads a list in cdn-ranges.txt's format: one "<name> <CIDR>" a
// line, blank lines and # comments ignored. It returns no list and an
// error naming the first line that is not in that form, or cannot be read
// (one over 64 KiB among them).
func ParseCDNs(r io.Reader) ([]CDN, error) {
	var out []CDN
	index := map[string]int{}
	sc := bufio.NewScanner(r)
	line := 1
	for ; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		i := strings.LastIndexAny(text, " \t")
		if i < 0 {
			return nil, fmt.Errorf("line %d: want a provider name and a CIDR, got %q", line, clip(text))
		}
		name, cidr := strings.TrimSpace(text[:i]), text[i+1:]
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not a CIDR", line, clip(cidr))
		}
		n, ok := index[name]
		if !ok {
			n = len(out)
			index[name] = n
			out = append(out, CDN{Name: name})
		}
		out[n].Prefixes = append(out[n].Prefixes, p.Masked())
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", line, bufio.MaxScanTokenSize)
	} else if err != nil {
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	return out, nil
}

// cdnOf returns the name of the CDN every address belongs to, or "".
func (e *Engine) cdnOf(addrs []netip.Addr) string {
	name := ""
	for _, a := range addrs {
		found := ""
		for _, c := range e.cfg.CDNs {
			for _, p := range c.Prefixes {
				if p.Contains(a.Unmap()) {
					found = c.Name
				}
			}
		}
		if found == "" || name != "" && found != name {
			return ""
		}
		name = found
	}
	return name
}

// ChallengeToken returns the token the edge answers at ChallengePath for
// host, for the HTTP ownership check through a proxy: the token of the
// custom domain holding host, if it has one. The token is no secret (its
// TXT record is public); what the check proves is that a request for host
// reaches this platform.
//
// Anyone can send the edge any Host, so it reads an in-memory table kept
// with the routing table and does no I/O, like Route: a domain this engine
// adds or removes is known at once, another process's within
// RefreshEvery (within milliseconds with EngineConfig.Feed).
func (e *Engine) ChallengeToken(_ context.Context, host string) (string, bool) {
	token, ok := (*e.tokens.Load())[hostName(host)]
	return token, ok && token != ""
}

// Holds reports whether host (a Host header or a TLS server name) is held
// by a custom domain in any state but removed or released: a name the
// certificate layer may be validating, or be about to. Anyone can send any
// name, so it reads the same in-memory table as ChallengeToken and does no
// I/O (the ACME adapter's Config.Held).
func (e *Engine) Holds(host string) bool {
	_, ok := (*e.tokens.Load())[hostName(host)]
	return ok
}

// viaProxy is the ownership check of a name whose record resolves to
// addresses that are not the edge's, as a CDN's proxy or a flattened
// CNAME does: it passes when the TXT record at the challenge name holds
// the token and an HTTP request for ChallengePath over the name, sent to
// those addresses, gets the token back from this platform. Once the name
// has verified (verified: the check is a drift check), the HTTP check
// alone decides whether it still reaches this platform: the TXT record
// proved control once, and may be deleted afterwards, as for a name that
// is not proxied (see outstandingProof). It returns the finding that
// explains a failure (PROXIED for a known CDN), or nil.
func (e *Engine) viaProxy(ctx context.Context, n Name, token string, verified bool, addrs []netip.Addr, base Finding) (*Finding, error) {
	cdn := e.cdnOf(addrs)
	words := strings.Join(addrStrings(addrs), ", ")
	txt := fmt.Sprintf("create the TXT record %s with the value %s (TTL 3600)", challengeLabel(n), token)
	f := base
	if cdn != "" {
		f = Finding{
			Code: FindingProxied,
			Message: fmt.Sprintf("%s resolves to %s, addresses of %s: the record is proxied (or flattened), so its CNAME cannot be seen",
				n.Unicode, words, cdn),
			Fix: fmt.Sprintf("Either switch %s's proxy off for this record (DNS only), or keep it and %s; "+
				"the platform then checks over HTTP, through the proxy, that %s reaches it.", cdn, txt, n.Unicode),
			Records: base.Records,
		}
	} else if token != "" {
		f.Fix += fmt.Sprintf(". If your DNS provider proxies or flattens the record on purpose, instead %s; "+
			"the platform then checks over HTTP that %s reaches it.", txt, n.Unicode)
	}
	if token == "" {
		return &f, nil
	}
	if !verified {
		proof, err := e.checkOwnership(ctx, n, token)
		if err != nil {
			return nil, err
		}
		if proof != nil {
			return &f, nil
		}
	}
	if err := e.probe(ctx, n, addrs, token); err != nil {
		if verified {
			f.Message += fmt.Sprintf(". The HTTP check through %s failed: %v", words, err)
		} else {
			f.Message += fmt.Sprintf(". The TXT record is right, but the HTTP check through %s failed: %v", words, err)
		}
		f.Fix = fmt.Sprintf("Make sure http://%s%s reaches this platform through the proxy (plain HTTP, no redirect), then click Verify.",
			n.ASCII, ChallengePath)
		return &f, nil
	}
	return nil, nil
}

// probe fetches ChallengePath over n from the first of addrs that answers
// and checks that the body is token. Addresses that are not public are
// refused unless EngineConfig.ProbePrivate is set, so the check cannot be
// aimed at the platform's own network.
func (e *Engine) probe(ctx context.Context, n Name, addrs []netip.Addr, token string) error {
	var last error
	for _, a := range addrs {
		a = a.Unmap()
		if !e.cfg.ProbePrivate && !netguard.Public(a) {
			last = fmt.Errorf("%s is not a public address", a)
			continue
		}
		err := e.probeOne(ctx, n, a, token)
		if err == nil {
			return nil
		}
		last = err
	}
	if last == nil {
		last = errors.New("no address to ask")
	}
	return last
}

func (e *Engine) probeOne(ctx context.Context, n Name, a netip.Addr, token string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	addr := net.JoinHostPort(a.String(), strconv.Itoa(e.cfg.ProbePort))
	client := &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.ASCII+ChallengePath, nil)
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("no answer from %s", a)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", a, res.Status)
	}
	if strings.TrimSpace(string(body)) != token {
		return fmt.Errorf("%s answered, but not with this platform's token", a)
	}
	return nil
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
