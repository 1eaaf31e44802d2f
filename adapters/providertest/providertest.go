// Package providertest is the conformance suite every libdns provider of
// this project passes (memzone, rfc2136): get, append, set and delete with
// the libdns semantics the DNS configurator relies on. Run it from a test
// against a zone the test owns.
package providertest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"
)

// Provider is what the suite exercises: the four libdns record interfaces.
type Provider interface {
	libdns.RecordGetter
	libdns.RecordAppender
	libdns.RecordSetter
	libdns.RecordDeleter
}

// Run runs the suite against p on zone ("example.com."). The zone may hold
// other records; the suite only touches names under a label of its own
// ("pt-<n>") and leaves them deleted. Subtests run one after the other.
func Run(t *testing.T, p Provider, zone string) {
	t.Helper()
	s := &suite{p: p, zone: zone, prefix: fmt.Sprintf("pt-%d", time.Now().UnixNano()%1e9)}
	tests := []struct {
		name string
		fn   func(t *testing.T, name string)
	}{
		{"AppendAndGetEachType", s.appendAndGetEachType},
		{"AppendAddsToRRset", s.appendAddsToRRset},
		{"AppendSetsTheRRsetTTL", s.appendSetsTheRRsetTTL},
		{"AppendIdenticalRecordOnce", s.appendIdenticalOnce},
		{"SetReplacesRRset", s.setReplacesRRset},
		{"SetCreates", s.setCreates},
		{"DeleteExact", s.deleteExact},
		{"DeleteIsIdempotent", s.deleteIdempotent},
		{"DeleteByNameAndType", s.deleteByNameAndType},
		{"DeleteByName", s.deleteByName},
		{"DeleteDifferentDataKeepsRecord", s.deleteDifferentData},
		{"TXTSpecialAndLong", s.txtSpecialAndLong},
		{"ApexRecords", s.apex},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("t%d.%s", i, s.prefix)
			t.Cleanup(func() { s.cleanup(t, name) })
			tt.fn(t, name)
		})
	}
}

type suite struct {
	p      Provider
	zone   string
	prefix string
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// at returns the records named name in the zone, as comparable RRs in a
// stable order; it checks each is a typed libdns struct for common types.
func (s *suite) at(t *testing.T, name string) []libdns.RR {
	t.Helper()
	recs, err := s.p.GetRecords(ctx(t), s.zone)
	if err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	out := []libdns.RR{}
	for _, rec := range recs {
		rr := rec.RR()
		if !strings.EqualFold(rr.Name, name) {
			continue
		}
		checkTyped(t, rec)
		rr.Name = strings.ToLower(rr.Name)
		out = append(out, rr)
	}
	sortRRs(out)
	return out
}

func checkTyped(t *testing.T, rec libdns.Record) {
	t.Helper()
	want := map[string]string{"A": "Address", "AAAA": "Address", "CNAME": "CNAME", "CAA": "CAA", "TXT": "TXT"}[rec.RR().Type]
	got := ""
	switch rec.(type) {
	case libdns.Address:
		got = "Address"
	case libdns.CNAME:
		got = "CNAME"
	case libdns.CAA:
		got = "CAA"
	case libdns.TXT:
		got = "TXT"
	}
	if want != "" && got != want {
		t.Fatalf("record %v is a %T, want libdns.%s", rec.RR(), rec, want)
	}
}

func rrs(recs ...libdns.Record) []libdns.RR {
	out := []libdns.RR{}
	for _, r := range recs {
		out = append(out, r.RR())
	}
	sortRRs(out)
	return out
}

func sortRRs(rrs []libdns.RR) {
	slices.SortFunc(rrs, func(a, b libdns.RR) int {
		return strings.Compare(a.Name+" "+a.Type+" "+a.Data, b.Name+" "+b.Type+" "+b.Data)
	})
}

func (s *suite) want(t *testing.T, name string, want ...libdns.Record) {
	t.Helper()
	if got, w := s.at(t, name), rrs(want...); !slices.Equal(got, w) {
		t.Fatalf("zone has at %q:\n  %v\nwant:\n  %v", name, got, w)
	}
}

func (s *suite) append(t *testing.T, recs ...libdns.Record) []libdns.Record {
	t.Helper()
	out, err := s.p.AppendRecords(ctx(t), s.zone, recs)
	if err != nil {
		t.Fatalf("AppendRecords(%v): %v", rrs(recs...), err)
	}
	return out
}

func (s *suite) cleanup(t *testing.T, name string) {
	for _, n := range []string{name, "www." + name} {
		if _, err := s.p.DeleteRecords(context.Background(), s.zone, []libdns.Record{libdns.RR{Name: n}}); err != nil {
			t.Errorf("cleanup of %s: %v", n, err)
		}
	}
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func (s *suite) appendAndGetEachType(t *testing.T, name string) {
	recs := []libdns.Record{
		libdns.Address{Name: name, TTL: 5 * time.Minute, IP: ip("192.0.2.1")},
		libdns.Address{Name: name, TTL: 5 * time.Minute, IP: ip("2001:db8::1")},
		libdns.CAA{Name: name, TTL: time.Hour, Flags: 0, Tag: "issue", Value: "letsencrypt.org"},
		libdns.CAA{Name: name, TTL: time.Hour, Flags: 128, Tag: "issuewild", Value: ";"},
		libdns.TXT{Name: name, TTL: time.Minute, Text: "v=verify1 token"},
		libdns.CNAME{Name: "www." + name, TTL: 10 * time.Minute, Target: "stores.example.net."},
	}
	got := s.append(t, recs...)
	if g, w := rrs(got...), rrs(recs...); !slices.Equal(g, w) {
		t.Fatalf("AppendRecords returned\n  %v\nwant\n  %v", g, w)
	}
	for _, r := range got {
		checkTyped(t, r)
	}
	s.want(t, name, recs[:5]...)
	s.want(t, "www."+name, recs[5])
}

func (s *suite) appendAddsToRRset(t *testing.T, name string) {
	a1 := libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")}
	a2 := libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.2")}
	s.append(t, a1)
	s.append(t, a2)
	s.want(t, name, a1, a2)
}

// appendSetsTheRRsetTTL: the records of one name and type share one TTL
// (RFC 2181 §5.2), so a record appended with another TTL gives it to the
// records already there, as DNS servers do on an update (Knot, BIND).
func (s *suite) appendSetsTheRRsetTTL(t *testing.T, name string) {
	a1 := libdns.Address{Name: name, TTL: time.Hour, IP: ip("192.0.2.1")}
	a2 := libdns.Address{Name: name, TTL: 5 * time.Minute, IP: ip("192.0.2.2")}
	txt := libdns.TXT{Name: name, TTL: time.Hour, Text: "another type keeps its TTL"}
	s.append(t, a1, txt)
	s.append(t, a2)
	a1.TTL = a2.TTL
	s.want(t, name, a1, a2, txt)
}

func (s *suite) appendIdenticalOnce(t *testing.T, name string) {
	txt := libdns.TXT{Name: name, TTL: time.Minute, Text: "same"}
	s.append(t, txt)
	if _, err := s.p.AppendRecords(ctx(t), s.zone, []libdns.Record{txt}); err != nil {
		t.Fatalf("appending an identical record: %v", err)
	}
	s.want(t, name, txt)
}

func (s *suite) setReplacesRRset(t *testing.T, name string) {
	txt := libdns.TXT{Name: name, TTL: time.Minute, Text: "untouched"}
	s.append(t,
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")},
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.2")},
		txt,
	)
	a3 := libdns.Address{Name: name, TTL: 2 * time.Minute, IP: ip("192.0.2.3")}
	got, err := s.p.SetRecords(ctx(t), s.zone, []libdns.Record{a3})
	if err != nil {
		t.Fatalf("SetRecords: %v", err)
	}
	if g, w := rrs(got...), rrs(a3); !slices.Equal(g, w) {
		t.Fatalf("SetRecords returned %v, want %v", g, w)
	}
	s.want(t, name, a3, txt)
}

func (s *suite) setCreates(t *testing.T, name string) {
	c := libdns.CNAME{Name: "www." + name, TTL: time.Minute, Target: "a.example.net."}
	if _, err := s.p.SetRecords(ctx(t), s.zone, []libdns.Record{c}); err != nil {
		t.Fatalf("SetRecords: %v", err)
	}
	s.want(t, "www."+name, c)
	c2 := libdns.CNAME{Name: "www." + name, TTL: time.Minute, Target: "b.example.net."}
	if _, err := s.p.SetRecords(ctx(t), s.zone, []libdns.Record{c2}); err != nil {
		t.Fatalf("SetRecords replacing the CNAME: %v", err)
	}
	s.want(t, "www."+name, c2)
}

func (s *suite) deleteExact(t *testing.T, name string) {
	a1 := libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")}
	a2 := libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.2")}
	s.append(t, a1, a2)
	got, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{a1})
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if g, w := rrs(got...), rrs(a1); !slices.Equal(g, w) {
		t.Fatalf("DeleteRecords returned %v, want %v", g, w)
	}
	s.want(t, name, a2)
}

func (s *suite) deleteIdempotent(t *testing.T, name string) {
	txt := libdns.TXT{Name: name, TTL: time.Minute, Text: "gone soon"}
	s.append(t, txt)
	for i, want := range [][]libdns.RR{rrs(txt), rrs()} {
		got, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{txt})
		if err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
		if g := rrs(got...); !slices.Equal(g, want) {
			t.Fatalf("delete #%d returned %v, want %v", i+1, g, want)
		}
	}
	s.want(t, name)
}

func (s *suite) deleteByNameAndType(t *testing.T, name string) {
	txt := libdns.TXT{Name: name, TTL: time.Minute, Text: "kept"}
	s.append(t,
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")},
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.2")},
		txt,
	)
	got, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{libdns.RR{Name: name, Type: "A"}})
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("DeleteRecords returned %v, want both A records", rrs(got...))
	}
	s.want(t, name, txt)
}

func (s *suite) deleteByName(t *testing.T, name string) {
	s.append(t,
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")},
		libdns.TXT{Name: name, TTL: time.Minute, Text: "x"},
	)
	if _, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{libdns.RR{Name: name}}); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	s.want(t, name)
}

func (s *suite) deleteDifferentData(t *testing.T, name string) {
	a := libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.1")}
	s.append(t, a)
	for _, other := range []libdns.Record{
		libdns.Address{Name: name, TTL: time.Minute, IP: ip("192.0.2.9")},
		libdns.Address{Name: name, TTL: time.Hour, IP: ip("192.0.2.1")}, // TTL differs
		libdns.TXT{Name: name, Text: "192.0.2.1"},
	} {
		got, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{other})
		if err != nil {
			t.Fatalf("DeleteRecords(%v): %v", other.RR(), err)
		}
		if len(got) != 0 {
			t.Fatalf("DeleteRecords(%v) deleted %v", other.RR(), rrs(got...))
		}
	}
	s.want(t, name, a)
}

func (s *suite) txtSpecialAndLong(t *testing.T, name string) {
	recs := []libdns.Record{
		libdns.TXT{Name: name, TTL: time.Minute, Text: `quotes " and \ backslash; semicolon`},
		libdns.TXT{Name: name, TTL: time.Minute, Text: strings.Repeat("0123456789", 40)}, // 400 bytes: two strings on the wire
	}
	s.append(t, recs...)
	s.want(t, name, recs...)
}

func (s *suite) apex(t *testing.T, name string) {
	// The apex is shared with other tests of the zone: use a TXT value of
	// our own and remove exactly it.
	txt := libdns.TXT{Name: "@", TTL: time.Minute, Text: "providertest " + name}
	s.append(t, txt)
	found := false
	for _, rr := range s.at(t, "@") {
		found = found || rr == txt.RR()
	}
	if !found {
		t.Fatalf("apex TXT %v not in zone", txt.RR())
	}
	if _, err := s.p.DeleteRecords(ctx(t), s.zone, []libdns.Record{txt}); err != nil {
		t.Fatal(err)
	}
	for _, rr := range s.at(t, "@") {
		if rr == txt.RR() {
			t.Fatalf("apex TXT still there after delete")
		}
	}
}
