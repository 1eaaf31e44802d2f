package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/rfc2136"
)

// dnsProviderSpec is a parsed -dns-provider: the DNS the platform manages
// for its customers, so that the dashboard can offer "Configure DNS for
// me" for the domains in its zones.
type dnsProviderSpec struct {
	kind   string // "rfc2136" or "memory"
	zones  []string
	rfc    *rfc2136.Provider
	listen string // memory: where its DNS server answers
}

const dnsProviderUsage = "rfc2136://KEYNAME:BASE64SECRET@HOST:PORT?alg=hmac-sha256&zones=example.com,example.net " +
	"or memory://?zones=example.com&listen=127.0.0.1:PORT"

// parseDNSProvider reads a -dns-provider value; "" is none. The TSIG
// secret is base64, whose "/" a URL's user info cannot hold as it is: the
// user info is everything before the last "@" (it may be percent-encoded
// too).
func parseDNSProvider(s string) (*dnsProviderSpec, error) {
	if s == "" {
		return nil, nil
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, fmt.Errorf("want %s", dnsProviderUsage)
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	spec := &dnsProviderSpec{kind: scheme, zones: splitList(q.Get("zones"))}
	if len(spec.zones) == 0 {
		return nil, errors.New("zones=ZONE[,ZONE...] is required: the zones whose records the platform may write")
	}
	switch scheme {
	case "rfc2136":
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			return nil, fmt.Errorf("want %s", dnsProviderUsage)
		}
		user, host := rest[:at], rest[at+1:]
		name, secret, ok := strings.Cut(user, ":")
		if !ok || name == "" || secret == "" {
			return nil, errors.New("the TSIG key is KEYNAME:BASE64SECRET before the @")
		}
		if name, err = url.PathUnescape(name); err != nil {
			return nil, fmt.Errorf("key name: %w", err)
		}
		if secret, err = url.PathUnescape(secret); err != nil {
			return nil, errors.New("the TSIG secret's percent-encoding is malformed") // not err: it quotes part of the secret
		}
		if _, err := base64.StdEncoding.DecodeString(secret); err != nil {
			return nil, errors.New("the TSIG secret is not base64")
		}
		if _, _, err := net.SplitHostPort(host); err != nil {
			return nil, fmt.Errorf("server: want HOST:PORT, got %q", host)
		}
		alg := q.Get("alg")
		if alg == "" {
			alg = "hmac-sha256"
		}
		if !strings.HasSuffix(name, ".") {
			name += "."
		}
		spec.rfc = &rfc2136.Provider{Server: host, KeyName: name, KeyAlgorithm: alg, KeySecret: secret}
		if err := spec.rfc.CheckAlgorithm(); err != nil {
			return nil, err
		}
	case "memory":
		spec.listen = q.Get("listen")
		if spec.listen == "" {
			return nil, errors.New("memory: listen=HOST:PORT is required: where its DNS server answers")
		}
	default:
		return nil, fmt.Errorf("unknown provider %q: want %s", scheme, dnsProviderUsage)
	}
	return spec, nil
}

// open returns the provider of the managed zones, and what to close when
// the server stops.
func (s *dnsProviderSpec) open() (dnsconfig.Provider, func(), error) {
	switch s.kind {
	case "memory":
		p := memzone.New()
		for _, z := range s.zones {
			p.AddZone(z)
		}
		srv, err := p.Serve(s.listen)
		if err != nil {
			return nil, nil, fmt.Errorf("-dns-provider memory: %w", err)
		}
		return p, func() { srv.Close() }, nil
	default:
		return s.rfc, func() {}, nil
	}
}

// servesZone reports whether zone is one of the provider's zones.
func (s *dnsProviderSpec) servesZone(zone string) bool {
	zone = strings.TrimSuffix(strings.ToLower(zone), ".")
	for _, z := range s.zones {
		if strings.TrimSuffix(strings.ToLower(z), ".") == zone {
			return true
		}
	}
	return false
}
