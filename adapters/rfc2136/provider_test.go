package rfc2136_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/petstorekit/petstore/adapters/rfc2136"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/internal/faultproxy"
)

func TestKnotRejectsBadKeys(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	good := k.Provider()
	tests := []struct {
		name   string
		mutate func(p *rfc2136.Provider)
	}{
		{"wrong secret", func(p *rfc2136.Provider) { p.KeySecret = "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZyE=" }},
		{"unknown key", func(p *rfc2136.Provider) { p.KeyName = "someone-else." }},
		{"no key", func(p *rfc2136.Provider) { p.KeyName = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &rfc2136.Provider{Server: good.Server, KeyName: good.KeyName, KeyAlgorithm: good.KeyAlgorithm, KeySecret: good.KeySecret}
			tt.mutate(p)
			ctx := context.Background()
			_, err := p.AppendRecords(ctx, "example.com.", []libdns.Record{libdns.TXT{Name: "x", Text: "y"}})
			if err == nil {
				t.Fatal("update with a bad key succeeded")
			}
			if _, err := p.GetRecords(ctx, "example.com."); err == nil {
				t.Fatal("transfer with a bad key succeeded")
			}
		})
	}
	recs, err := good.GetRecords(context.Background(), "example.com.")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.RR().Name == "x" {
			t.Fatalf("a rejected update changed the zone: %v", r.RR())
		}
	}
}

func TestKnotRefusedUpdateIsAtomicErr(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	p := k.Provider()
	// The key may not update a zone the server is not authoritative for.
	_, err := p.SetRecords(context.Background(), "other.example.", []libdns.Record{libdns.TXT{Name: "x", Text: "y"}})
	if !errors.Is(err, rfc2136.ErrRcode) {
		t.Fatalf("err = %v, want ErrRcode", err)
	}
	var atomic libdns.AtomicErr
	if !errors.As(err, &atomic) {
		t.Fatalf("err = %v, want a libdns.AtomicErr", err)
	}
}

func TestProviderReportsUnreachableServer(t *testing.T) {
	// The discard port on loopback: nothing listens, so the dial fails at
	// once and the error comes back instead of hanging.
	p := &rfc2136.Provider{Server: "127.0.0.1:9", Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := p.GetRecords(ctx, "example.com."); err == nil {
		t.Fatal("GetRecords against a closed port: no error")
	}
}

// TestSlowServerWithinTimeout: a server that takes longer than two
// seconds to answer (busy, or far away) but answers within the
// provider's Timeout has its update applied and reported as applied.
func TestSlowServerWithinTimeout(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	proxy, err := faultproxy.New(k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	p := k.Provider()
	p.Server = proxy.Addr()
	p.Timeout = time.Minute
	proxy.SetLatency(1100 * time.Millisecond) // each way: 2.2 s a round trip
	if _, err := p.AppendRecords(context.Background(), "example.com.", []libdns.Record{libdns.TXT{Name: "slow", Text: "y"}}); err != nil {
		t.Fatalf("AppendRecords within a one-minute Timeout: %v", err)
	}
}
