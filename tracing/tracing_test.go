package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/tracing"
)

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// TestResolver looks names up in a real DNS server on 127.0.0.1: each
// lookup is a client span, a child of the caller's, naming the question
// and the answers' count; a failing server marks the span an error.
func TestResolver(t *testing.T) {
	zone, srv := memzone.NewTestServer(t, "example.com")
	if _, err := zone.AppendRecords(context.Background(), "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Minute, Target: "edge.example.net."},
	}); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	res := tracing.Resolver(dnsresolver.New(srv.Addr()), tp)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "verify")
	got, err := res.Lookup(ctx, "shop.example.com", "CNAME")
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %v, %v", got, err)
	}
	srv.FailWith("broken.example.com.", dns.RcodeServerFailure)
	if _, err := res.Lookup(ctx, "broken.example.com", "A"); err == nil {
		t.Fatal("a SERVFAIL lookup succeeded")
	}
	parent.End()

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want two lookups and their parent", len(spans))
	}
	ok, failed := spans[0], spans[1]
	for _, s := range []sdktrace.ReadOnlySpan{ok, failed} {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the caller's span", s.Name())
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s is a %s span, want client", s.Name(), s.SpanKind())
		}
	}
	if a := attrs(ok); ok.Name() != "DNS CNAME" || a["dns.question.name"] != "shop.example.com" || a["petstore.result.count"] != "1" {
		t.Errorf("lookup span %q %v", ok.Name(), a)
	}
	if ok.Status().Code == codes.Error {
		t.Error("a successful lookup is an error span")
	}
	if failed.Name() != "DNS A" || failed.Status().Code != codes.Error {
		t.Errorf("failed lookup: span %q status %v, want DNS A with an error status", failed.Name(), failed.Status())
	}
}

// TestLimiter: a decision's span says what was decided and whose budget,
// never the address.
func TestLimiter(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	l := tracing.Limiter(ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{}), tp)
	limits := petstore.Limits{PerMinute: 1, PerDay: 10}
	for range 2 {
		if _, err := l.Decide(context.Background(), "ip:192.0.2.7", limits); err != nil {
			t.Fatal(err)
		}
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []string{"allowed", "limited"} {
		a := attrs(spans[i])
		if a["petstore.ratelimit.result"] != want || a["petstore.ratelimit.subject"] != "ip" {
			t.Errorf("decision %d: %v, want result %s for subject ip", i, a, want)
		}
		for _, v := range a {
			if v == "192.0.2.7" || v == "ip:192.0.2.7" {
				t.Errorf("decision %d records the client address", i)
			}
		}
	}
}

// TestNilProvider: without a provider every port is returned as it is.
func TestNilProvider(t *testing.T) {
	l := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	if got := tracing.Limiter(l, nil); got != tracing.Decider(l) {
		t.Error("Limiter(l, nil) wrapped l")
	}
	r := dnsresolver.New("127.0.0.1:53")
	if got := tracing.Resolver(r, nil); got != r {
		t.Error("Resolver(r, nil) wrapped r")
	}
}
