package acme

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
)

// DCV delegation: a customer's _acme-challenge.<name> CNAME points into a
// zone the platform's own DNS serves (Config.DCVZone), so the issuer
// solves DNS-01 by writing the TXT record there, through certmagic's
// DNS-01 solver and the zone's libdns provider (Config.DCVProvider). This
// gets a certificate before the name's traffic moves to the platform, and
// is the only way to get a wildcard's.

// delegation returns where name's DNS-01 record is delegated to: the
// target of the CNAME at _acme-challenge.<name> (a wildcard's base name's)
// when it lies in the DCV zone, else "".
func (is *Issuer) delegation(ctx context.Context, name string) (string, error) {
	if is.dcvZone == "" || is.cfg.Resolver == nil {
		return "", nil
	}
	recs, err := is.cfg.Resolver.Lookup(ctx, "_acme-challenge."+strings.TrimPrefix(name, "*."), "CNAME")
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		if t := normalize(r.Value); strings.HasSuffix(t, "."+is.dcvZone) {
			return t, nil
		}
	}
	return "", nil
}

// usesDCV reports whether name's certificate is obtained and renewed by
// DNS-01 through the delegation: every wildcard, and a name whose
// delegation Request found.
func (is *Issuer) usesDCV(name string) bool {
	if is.dcv == nil {
		return false
	}
	if strings.HasPrefix(name, "*.") {
		return true
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.delegated[name]
}

// configFor is the certmagic config that obtains and renews name.
func (is *Issuer) configFor(name string) *certmagic.Config {
	if is.usesDCV(name) {
		return is.dcv
	}
	return is.magic
}

// configForCert is certmagic's GetConfigForCert: renewals of a delegated
// name go through DNS-01 too.
func (is *Issuer) configForCert(c certmagic.Certificate) (*certmagic.Config, error) {
	for _, n := range c.Names {
		if is.usesDCV(normalize(n)) {
			return is.dcv, nil
		}
	}
	return is.magic, nil
}

// dcvSolver is an acmez solver for DNS-01 by delegation: for each
// challenge it finds the delegation target in DNS and has a certmagic
// DNS01Solver, overridden to that target, write and remove the TXT record
// through the DCV zone's provider.
type dcvSolver struct {
	is      *Issuer
	mu      sync.Mutex
	solvers map[string]*certmagic.DNS01Solver // by challenge token
}

func (s *dcvSolver) solver(ctx context.Context, chal acme.Challenge) (*certmagic.DNS01Solver, error) {
	s.mu.Lock()
	sv := s.solvers[chal.Token]
	s.mu.Unlock()
	if sv != nil {
		return sv, nil
	}
	name := chal.Identifier.Value
	target, err := s.is.delegation(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reading the DCV delegation of %s: %w", name, err)
	}
	if target == "" {
		return nil, fmt.Errorf("_acme-challenge.%s is not delegated to %s: create the CNAME the dashboard shows", name, s.is.dcvZone)
	}
	sv = &certmagic.DNS01Solver{DNSManager: certmagic.DNSManager{
		DNSProvider:    s.is.cfg.DCVProvider,
		Resolvers:      s.is.cfg.DNSResolvers,
		OverrideDomain: target,
		// The CA reads the record from the platform's own servers, which
		// answer at once; see newConfig.
		PropagationTimeout: -1,
		Logger:             zapToSlog(s.is.log),
	}}
	s.mu.Lock()
	s.solvers[chal.Token] = sv
	s.mu.Unlock()
	return sv, nil
}

// Present implements acmez.Solver.
func (s *dcvSolver) Present(ctx context.Context, chal acme.Challenge) error {
	sv, err := s.solver(ctx, chal)
	if err != nil {
		return err
	}
	return sv.Present(ctx, chal)
}

// Wait implements acmez.Waiter.
func (s *dcvSolver) Wait(ctx context.Context, chal acme.Challenge) error {
	sv, err := s.solver(ctx, chal)
	if err != nil {
		return err
	}
	return sv.Wait(ctx, chal)
}

// CleanUp implements acmez.Solver.
func (s *dcvSolver) CleanUp(ctx context.Context, chal acme.Challenge) error {
	s.mu.Lock()
	sv := s.solvers[chal.Token]
	delete(s.solvers, chal.Token)
	s.mu.Unlock()
	if sv == nil {
		return nil
	}
	return sv.CleanUp(ctx, chal)
}
