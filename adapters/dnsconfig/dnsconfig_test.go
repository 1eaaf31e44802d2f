package dnsconfig_test

import (
	"context"
	"fmt"
	"net/netip"

	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/customdomain"
)

func zoneFor(i int) string { return fmt.Sprintf("c%d.example.", i) }

// backends returns memzone and, when knotd is installed, Knot, each with
// n fresh zones.
func backends(t *testing.T, n int) []rfc2136test.Backend {
	var zones []string
	for i := range n {
		zones = append(zones, zoneFor(i))
	}
	return rfc2136test.Backends(t, zones...)
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// zoneAt lists "TYPE data" of the records at name, sorted.
func zoneAt(t *testing.T, p dnsconfig.Provider, zone, name string) []string {
	t.Helper()
	return recordsAt(t, p, zone, name, func(rr libdns.RR) string { return rr.Type + " " + rr.Data })
}

// zoneTTLs lists "TYPE data TTL" of the records at name, sorted: a
// record whose TTL changed is not the same record.
func zoneTTLs(t *testing.T, p dnsconfig.Provider, zone, name string) []string {
	t.Helper()
	return recordsAt(t, p, zone, name, func(rr libdns.RR) string { return fmt.Sprintf("%s %s %s", rr.Type, rr.Data, rr.TTL) })
}

// recordsAt lists the records at name as show writes them, sorted.
func recordsAt(t *testing.T, p dnsconfig.Provider, zone, name string, show func(libdns.RR) string) []string {
	t.Helper()
	recs, err := p.GetRecords(context.Background(), zone)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		if rr := r.RR(); rr.Name == name {
			out = append(out, show(rr))
		}
	}
	slices.Sort(out)
	return out
}

func codes(fs []customdomain.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestConfigure(t *testing.T) {
	tests := []struct {
		name      string
		existing  []libdns.Record
		want      []customdomain.Record
		codes     []string
		at        string   // name to inspect afterwards
		zoneAfter []string // records at `at` after Configure
	}{
		{
			name:      "subdomain CNAME written",
			want:      []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example", TTL: 300}},
			codes:     []string{},
			at:        "shop",
			zoneAfter: []string{"CNAME stores.petstore.example."},
		},
		{
			name:      "A where the CNAME must go",
			existing:  []libdns.Record{libdns.Address{Name: "shop", TTL: time.Hour, IP: ip("203.0.113.5")}},
			want:      []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example", TTL: 300}},
			codes:     []string{dnsconfig.CodeConflictingRecord},
			at:        "shop",
			zoneAfter: []string{"A 203.0.113.5"},
		},
		{
			name:      "other CNAME",
			existing:  []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "old-host.example.net."}},
			want:      []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example", TTL: 300}},
			codes:     []string{dnsconfig.CodeCNAMEMismatch},
			at:        "shop",
			zoneAfter: []string{"CNAME old-host.example.net."},
		},
		{
			name:      "same CNAME already there",
			existing:  []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "Stores.Petstore.Example."}},
			want:      []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example.", TTL: 300}},
			codes:     []string{},
			at:        "shop",
			zoneAfter: []string{"CNAME stores.petstore.example."},
		},
		{
			name: "apex addresses next to NS",
			want: []customdomain.Record{
				{Type: "A", Name: "@", Value: "192.0.2.10", TTL: 300},
				{Type: "AAAA", Name: "@", Value: "2001:db8::10", TTL: 300},
			},
			codes:     []string{},
			at:        "@",
			zoneAfter: []string{"A 192.0.2.10", "AAAA 2001:db8::10", "NS ns1.%z"},
		},
		{
			name:     "apex has another host's address",
			existing: []libdns.Record{libdns.Address{Name: "@", TTL: time.Hour, IP: ip("203.0.113.5")}},
			want: []customdomain.Record{
				{Type: "A", Name: "@", Value: "192.0.2.10", TTL: 300},
				{Type: "AAAA", Name: "@", Value: "2001:db8::10", TTL: 300},
			},
			// Our AAAA beside their A would send IPv6 visitors here
			// and IPv4 ones there: nothing is written at the name.
			codes:     []string{dnsconfig.CodeConflictingRecord},
			at:        "@",
			zoneAfter: []string{"A 203.0.113.5", "NS ns1.%z"},
		},
		{
			name:     "apex has another host's IPv6 address",
			existing: []libdns.Record{libdns.Address{Name: "@", TTL: time.Hour, IP: ip("2001:db8::99")}},
			want:     []customdomain.Record{{Type: "A", Name: "@", Value: "192.0.2.10", TTL: 300}},
			// Our A alone would leave IPv6 visitors at the other host.
			codes:     []string{dnsconfig.CodeConflictingRecord},
			at:        "@",
			zoneAfter: []string{"AAAA 2001:db8::99", "NS ns1.%z"},
		},
		{
			// The customer made one of the edge's addresses by hand: the
			// other is added beside it (with its TTL), not reported as
			// another server's.
			name:     "apex has one of the addresses already",
			existing: []libdns.Record{libdns.Address{Name: "@", TTL: time.Hour, IP: ip("192.0.2.10")}},
			want: []customdomain.Record{
				{Type: "A", Name: "@", Value: "192.0.2.10", TTL: 300},
				{Type: "A", Name: "@", Value: "192.0.2.11", TTL: 300},
			},
			codes:     []string{},
			at:        "@",
			zoneAfter: []string{"A 192.0.2.10", "A 192.0.2.11", "NS ns1.%z"},
		},
		{
			name:      "TXT next to a CNAME",
			existing:  []libdns.Record{libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "elsewhere.example.net."}},
			want:      []customdomain.Record{{Type: "TXT", Name: "shop", Value: "verify=1"}},
			codes:     []string{dnsconfig.CodeConflictingRecord},
			at:        "shop",
			zoneAfter: []string{"CNAME elsewhere.example.net."},
		},
		{
			name:      "TXT and CAA added beside the customer's",
			existing:  []libdns.Record{libdns.TXT{Name: "@", TTL: time.Hour, Text: "v=spf1 -all"}},
			want:      []customdomain.Record{{Type: "TXT", Name: "@", Value: "petstore-verify=abc"}, {Type: "CAA", Name: "@", Value: `0 issue "letsencrypt.org"`}},
			codes:     []string{},
			at:        "@",
			zoneAfter: []string{`CAA 0 issue "letsencrypt.org"`, "NS ns1.%z", "TXT petstore-verify=abc", "TXT v=spf1 -all"},
		},
		{
			name:      "ALIAS cannot be written",
			want:      []customdomain.Record{{Type: "ALIAS", Name: "@", Value: "stores.petstore.example"}},
			codes:     []string{dnsconfig.CodeUnsupportedRecord},
			at:        "@",
			zoneAfter: []string{"NS ns1.%z"},
		},
		{
			name:      "fully qualified name",
			want:      []customdomain.Record{{Type: "CNAME", Name: "www.%z", Value: "stores.petstore.example"}},
			codes:     []string{},
			at:        "www",
			zoneAfter: []string{"CNAME stores.petstore.example."},
		},
	}
	for _, b := range backends(t, len(tests)) {
		t.Run(b.Name, func(t *testing.T) {
			c := dnsconfig.New(b.Provider)
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					zone := zoneFor(i)
					if len(tt.existing) > 0 {
						if _, err := b.Provider.AppendRecords(ctx, zone, tt.existing); err != nil {
							t.Fatal(err)
						}
					}
					want := slices.Clone(tt.want)
					for j := range want {
						want[j].Name = strings.ReplaceAll(want[j].Name, "%z", zone)
					}
					before := map[string][]string{}
					for _, n := range []string{"@", "shop", "www"} {
						before[n] = zoneTTLs(t, b.Provider, zone, n)
					}
					created, findings, err := c.Configure(ctx, strings.TrimSuffix(zone, "."), want)
					if err != nil {
						t.Fatalf("Configure: %v", err)
					}
					if got := codes(findings); !slices.Equal(got, tt.codes) {
						t.Fatalf("findings = %v (%+v), want %v", got, findings, tt.codes)
					}
					for _, f := range findings {
						if f.Message == "" || f.Fix == "" || len(f.Records) == 0 {
							t.Fatalf("finding %+v lacks message, fix or records", f)
						}
					}
					wantAfter := []string{}
					for _, s := range tt.zoneAfter {
						wantAfter = append(wantAfter, strings.ReplaceAll(s, "%z", zone))
					}
					if got := zoneAt(t, b.Provider, zone, tt.at); !slices.Equal(got, wantAfter) {
						t.Fatalf("zone at %s = %q, want %q", tt.at, got, wantAfter)
					}
					// The records that were there are untouched, TTL
					// included: a record written into their RRset must not
					// change it (one TTL per RRset, RFC 2181 §5.2).
					for n, recs := range before {
						got := zoneTTLs(t, b.Provider, zone, n)
						for _, r := range recs {
							if !slices.Contains(got, r) {
								t.Fatalf("after Configure zone at %s = %q, want %q still there", n, got, r)
							}
						}
					}

					// Again: nothing new to write, same findings.
					createdAgain, again, err := c.Configure(ctx, zone, want)
					if err != nil || !slices.Equal(codes(again), tt.codes) || len(createdAgain) != 0 {
						t.Fatalf("second Configure = %v, %v, %v; want %v and nothing created", createdAgain, codes(again), err, tt.codes)
					}
					if got := zoneAt(t, b.Provider, zone, tt.at); !slices.Equal(got, wantAfter) {
						t.Fatalf("after second Configure zone at %s = %q, want %q", tt.at, got, wantAfter)
					}

					// Unconfigure deletes what Configure created: the zone is as
					// before, a record that was already there included.
					if err := c.Unconfigure(ctx, zone, created); err != nil {
						t.Fatalf("Unconfigure: %v", err)
					}
					for n, recs := range before {
						if got := zoneTTLs(t, b.Provider, zone, n); !slices.Equal(got, recs) {
							t.Fatalf("after Unconfigure zone at %s = %q, want %q as before", n, got, recs)
						}
					}
					if err := c.Unconfigure(ctx, zone, created); err != nil {
						t.Fatalf("second Unconfigure: %v", err)
					}
				})
			}
		})
	}
}

// racing is a real provider whose zone changes between the configurator's
// read and its write, as when the customer edits the zone at that moment.
type racing struct {
	dnsconfig.Provider
	once   sync.Once
	change func()
}

func (r *racing) GetRecords(ctx context.Context, zone string) ([]libdns.Record, error) {
	recs, err := r.Provider.GetRecords(ctx, zone)
	r.once.Do(r.change)
	return recs, err
}

func TestConfigureReadBack(t *testing.T) {
	for _, b := range backends(t, 1) {
		t.Run(b.Name, func(t *testing.T) {
			zone := zoneFor(0)
			p := &racing{Provider: b.Provider, change: func() {
				if _, err := b.Provider.AppendRecords(context.Background(), zone, []libdns.Record{libdns.Address{Name: "shop", TTL: time.Hour, IP: ip("203.0.113.5")}}); err != nil {
					t.Error(err)
				}
			}}
			created, findings, err := dnsconfig.New(p).Configure(context.Background(), zone,
				[]customdomain.Record{{Type: "CNAME", Name: "shop", Value: "stores.petstore.example"}})
			switch b.Name {
			case "knot":
				// Knot accepts the CNAME next to the new A and ignores it.
				if err != nil {
					t.Fatalf("Configure: %v", err)
				}
				if got, want := codes(findings), []string{dnsconfig.CodeWriteNotApplied}; !slices.Equal(got, want) {
					t.Fatalf("findings = %v, want %v", got, want)
				}
			case "memzone":
				// memzone refuses the write outright.
				if err == nil || !strings.Contains(err.Error(), "CNAME cannot share") {
					t.Fatalf("Configure = %v, %v; want the provider's refusal", findings, err)
				}
			}
			// Not in the zone, so not the configurator's: a CNAME the customer
			// creates by hand once the A is gone is theirs.
			if len(created) != 0 {
				t.Fatalf("created = %+v, want nothing", created)
			}
			if got, want := zoneAt(t, b.Provider, zone, "shop"), []string{"A 203.0.113.5"}; !slices.Equal(got, want) {
				t.Fatalf("zone at shop = %q, want %q", got, want)
			}
		})
	}
}

func TestConfigureProviderDown(t *testing.T) {
	c := dnsconfig.New(memzone.New()) // no zones: every call fails
	if _, _, err := c.Configure(context.Background(), "example.com", []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "x.example"}}); err == nil {
		t.Fatal("Configure on a zone the provider does not have: no error")
	}
	if err := c.Unconfigure(context.Background(), "example.com", []customdomain.Record{{Type: "CNAME", Name: "shop", Value: "x.example"}}); err == nil {
		t.Fatal("Unconfigure on a zone the provider does not have: no error")
	}
}
