package memzone_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/memzone"
)

func TestProviderRefusesBadInput(t *testing.T) {
	p := memzone.New()
	p.AddZone("example.com")
	ctx := context.Background()
	if _, err := p.AppendRecords(ctx, "example.com", []libdns.Record{libdns.Address{Name: "www", IP: netip.MustParseAddr("192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		zone string
		rec  libdns.Record
		want string
	}{
		{"unknown zone", "example.org", libdns.TXT{Name: "x", Text: "y"}, "no zone"},
		{"CNAME next to A", "example.com", libdns.CNAME{Name: "www", Target: "t.example.net"}, "CNAME cannot share"},
		{"name outside zone", "example.com", libdns.TXT{Name: "x.example.org.", Text: "y"}, "outside zone"},
		{"bad IP", "example.com", libdns.RR{Name: "x", Type: "A", Data: "300.1.1.1"}, "invalid IP"},
		{"IPv6 as A", "example.com", libdns.RR{Name: "x", Type: "A", Data: "2001:db8::1"}, "not an IPv4"},
		{"unknown type", "example.com", libdns.RR{Name: "x", Type: "BOGUS", Data: "1"}, "unknown record type"},
		{"bad label", "example.com", libdns.TXT{Name: "a..b", Text: "y"}, "invalid name"},
		{"SOA", "example.com", libdns.RR{Name: "@", Type: "SOA", Data: "a. b. 1 2 3 4 5"}, "SOA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.AppendRecords(ctx, tt.zone, []libdns.Record{tt.rec})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	got, err := p.GetRecords(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 { // NS + the A record
		t.Fatalf("zone changed by refused writes: %v", got)
	}
}

func TestProviderSetCNAMEOverAIsAtomic(t *testing.T) {
	p := memzone.New()
	p.AddZone("example.com")
	ctx := context.Background()
	if _, err := p.AppendRecords(ctx, "example.com", []libdns.Record{libdns.Address{Name: "www", IP: netip.MustParseAddr("192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	_, err := p.SetRecords(ctx, "example.com", []libdns.Record{
		libdns.TXT{Name: "other", Text: "x"},
		libdns.CNAME{Name: "www", Target: "t.example.net."},
	})
	var atomic libdns.AtomicErr
	if err == nil || !errors.As(err, &atomic) {
		t.Fatalf("err = %v, want an AtomicErr", err)
	}
	got, _ := p.GetRecords(ctx, "example.com")
	for _, r := range got {
		if r.RR().Name == "other" {
			t.Fatalf("failed SetRecords left %v behind", r)
		}
	}
}

func TestProviderListZones(t *testing.T) {
	p := memzone.New()
	p.AddZone("b.example")
	p.AddZone("A.example.")
	p.AddZone("b.example") // again: no-op
	zones, err := p.ListZones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(zones), 2; got != want {
		t.Fatalf("%d zones, want %d", got, want)
	}
	if zones[0].Name != "a.example." || zones[1].Name != "b.example." {
		t.Fatalf("zones = %v", zones)
	}
}

func TestProviderHonoursCancellation(t *testing.T) {
	p := memzone.New()
	p.AddZone("example.com")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.GetRecords(ctx, "example.com"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// FuzzAppendRecord feeds arbitrary name/type/data through the record
// conversion: whatever is accepted must read back unchanged through
// GetRecords and be answerable by the server code without panicking.
func FuzzAppendRecord(f *testing.F) {
	f.Add("www", "A", "192.0.2.1")
	f.Add("@", "AAAA", "2001:db8::1")
	f.Add("shop", "CNAME", "www.example.net.")
	f.Add("@", "CAA", `0 issue "letsencrypt.org"`)
	f.Add("@", "CAA", `128 issuewild ";"`)
	f.Add("_acme", "TXT", "quote\" back\\slash \x00\xff")
	f.Add("mail", "MX", "10 mx.example.net")
	f.Add("x.example.com.", "SRV", "1 2 443 t.example.net.")
	f.Add("a..b", "TXT", "")
	f.Add("*", "HTTPS", `1 . alpn="h2"`)
	f.Fuzz(func(t *testing.T, name, typ, data string) {
		p := memzone.New()
		p.AddZone("example.com")
		ctx := context.Background()
		in := libdns.RR{Name: name, Type: typ, TTL: time.Minute, Data: data}
		added, err := p.AppendRecords(ctx, "example.com", []libdns.Record{in})
		if err != nil {
			return
		}
		if len(added) != 1 {
			t.Fatalf("added %d records for one", len(added))
		}
		got, err := p.GetRecords(ctx, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("zone holds %d records, want NS + 1", len(got))
		}
		// Writing what was read back must be a no-op: the conversion round-trips.
		again, err := p.AppendRecords(ctx, "example.com", []libdns.Record{got[1]})
		if err != nil {
			t.Fatalf("re-append of %#v: %v", got[1].RR(), err)
		}
		if len(again) != 0 {
			t.Fatalf("re-append of %#v added %v: round trip changed it", got[1].RR(), again)
		}
		deleted, err := p.DeleteRecords(ctx, "example.com", []libdns.Record{got[1]})
		if err != nil || len(deleted) != 1 {
			t.Fatalf("delete of read-back record: %v, %v", deleted, err)
		}
		_ = dns.Fqdn(name)
	})
}
