package dnsconfig

import (
	"context"
	"strings"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// Zones is the DNS a platform manages for its customers: a configurator
// limited to the zones the platform's provider serves (its own zones, or
// zones delegated to it). A custom domain inside one of them can have its
// records written for it ("Configure DNS for me"); any other domain's
// records are the customer's to make.
//
// The engine names records relative to the registered domain (eTLD+1);
// Zones writes them in the deepest managed zone that holds them, so a
// platform managing "customers.example.com" can configure
// "shop.acme.customers.example.com". It is safe for concurrent use if the
// provider is.
type Zones struct {
	c     *Configurator
	zones []string // lower case, no trailing dot
}

var _ customdomain.DNSConfigurator = (*Zones)(nil)

// NewZones returns the configurator of zones, served by p.
func NewZones(p Provider, zones ...string) *Zones {
	z := &Zones{c: New(p)}
	for _, zone := range zones {
		if zone = strings.ToLower(trimDot(strings.TrimSpace(zone))); zone != "" {
			z.zones = append(z.zones, zone)
		}
	}
	return z
}

// Zones returns the managed zones, as given.
func (z *Zones) Zones() []string { return append([]string(nil), z.zones...) }

// Manages reports whether name (a custom domain, ASCII form) lies in one
// of the managed zones, so that its records can be written for it.
func (z *Zones) Manages(name string) bool {
	_, ok := z.zoneOf(strings.ToLower(trimDot(name)))
	return ok
}

// zoneOf returns the deepest managed zone holding the fully qualified fq.
func (z *Zones) zoneOf(fq string) (string, bool) {
	best := ""
	for _, zone := range z.zones {
		if (fq == zone || strings.HasSuffix(fq, "."+zone)) && len(zone) > len(best) {
			best = zone
		}
	}
	return best, best != ""
}

// place maps records named relative to zone into the managed zone that
// holds them. Records outside every managed zone are returned apart.
func (z *Zones) place(zone string, records []customdomain.Record) (map[string][]customdomain.Record, []customdomain.Record) {
	in := map[string][]customdomain.Record{}
	var out []customdomain.Record
	for _, r := range records {
		fq := strings.ToLower(fqdn(zone, relName(zone, r.Name)))
		mz, ok := z.zoneOf(fq)
		if !ok {
			out = append(out, r)
			continue
		}
		r.Name = "@"
		if fq != mz {
			r.Name = strings.TrimSuffix(fq, "."+mz)
		}
		in[mz] = append(in[mz], r)
	}
	return in, out
}

// Configure implements customdomain.DNSConfigurator for the managed zones. A
// record outside them is invalid_request: the platform cannot write it, and
// writing only part of what a domain needs would help nobody. The records
// it returns as created are named relative to zone, as asked.
func (z *Zones) Configure(ctx context.Context, zone string, records []customdomain.Record) ([]customdomain.Record, []customdomain.Finding, error) {
	in, out := z.place(zone, records)
	if len(out) > 0 {
		return nil, nil, petstore.Errorf(petstore.CodeInvalidRequest,
			"%s is not in a zone whose DNS the platform manages (%s); create the records at your DNS provider",
			fqdn(zone, relName(zone, out[0].Name)), strings.Join(z.zones, ", "))
	}
	created := []customdomain.Record{}
	findings := []customdomain.Finding{}
	for mz, recs := range in {
		c, f, err := z.c.Configure(ctx, mz, recs)
		for _, r := range c {
			r.Name = relName(zone, fqdn(mz, r.Name))
			created = append(created, r)
		}
		if err != nil {
			return created, nil, err
		}
		findings = append(findings, f...)
	}
	return created, findings, nil
}

// Unconfigure implements customdomain.DNSConfigurator: it deletes exactly the
// records Configure created in the managed zones; records outside them
// were never written.
func (z *Zones) Unconfigure(ctx context.Context, zone string, records []customdomain.Record) error {
	in, _ := z.place(zone, records)
	for mz, recs := range in {
		if err := z.c.Unconfigure(ctx, mz, recs); err != nil {
			return err
		}
	}
	return nil
}
