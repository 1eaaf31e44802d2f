package rfc2136_test

import (
	"context"
	"errors"
	"strings"
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

// TestPausedServerEndsWithTheContext: behind a black hole (the server is
// hung, or the route dropped) every call returns when its context is
// cancelled, not when the provider's own much longer Timeout runs out: a
// caller that gave up (a customer who left, a shutting-down server) is
// not held.
func TestPausedServerEndsWithTheContext(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	proxy, err := faultproxy.New(k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	p := k.Provider()
	p.Server = proxy.Addr()
	p.Timeout = time.Minute
	proxy.Pause()
	t.Cleanup(proxy.Restore)
	recs := []libdns.Record{libdns.TXT{Name: "x", Text: "y"}}
	for name, call := range map[string]func(context.Context) error{
		"GetRecords":    func(ctx context.Context) error { _, err := p.GetRecords(ctx, "example.com."); return err },
		"AppendRecords": func(ctx context.Context) error { _, err := p.AppendRecords(ctx, "example.com.", recs); return err },
		"SetRecords":    func(ctx context.Context) error { _, err := p.SetRecords(ctx, "example.com.", recs); return err },
		"DeleteRecords": func(ctx context.Context) error { _, err := p.DeleteRecords(ctx, "example.com.", recs); return err },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still waiting 5 s after the context was cancelled")
			}
		})
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

// TestKnotSaysWhatItRefused: a refused key or zone is reported as the
// server's refusal (ErrRcode) naming what it refused, the TSIG error
// (BADSIG for a wrong secret, BADKEY for a key it does not know) or the
// zone it does not serve (NOTAUTH), never as a signature problem of the
// answer, and without the secret.
func TestKnotSaysWhatItRefused(t *testing.T) {
	k := rfc2136test.StartKnot(t, "example.com.")
	const wrongSecret = "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZyE="
	tests := []struct {
		name   string
		zone   string
		mutate func(p *rfc2136.Provider)
		want   []string
	}{
		{"wrong secret", "example.com.", func(p *rfc2136.Provider) { p.KeySecret = wrongSecret }, []string{"BADSIG", rfc2136test.KeyName}},
		{"unknown key", "example.com.", func(p *rfc2136.Provider) { p.KeyName = "someone-else." }, []string{"BADKEY", "someone-else."}},
		{"zone not served", "nothere.example.", func(*rfc2136.Provider) {}, []string{"NOTAUTH", "nothere.example."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := k.Provider()
			tt.mutate(p)
			ctx := context.Background()
			_, appendErr := p.AppendRecords(ctx, tt.zone, []libdns.Record{libdns.TXT{Name: "x", Text: "y"}})
			_, getErr := p.GetRecords(ctx, tt.zone)
			for op, err := range map[string]error{"update": appendErr, "transfer": getErr} {
				if !errors.Is(err, rfc2136.ErrRcode) {
					t.Errorf("%s: err = %v, want ErrRcode", op, err)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: err = %v, want it to name %s", op, err, w)
					}
				}
				if strings.Contains(err.Error(), "signature") || strings.Contains(err.Error(), p.KeySecret) {
					t.Errorf("%s: err = %v, blames the answer's signature or shows the secret", op, err)
				}
			}
		})
	}
}
