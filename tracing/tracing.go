// Package tracing adds OpenTelemetry spans to petstore's ports: the pet,
// order, key and Idempotency-Key stores behind a request, the rate
// limiter's decision, DNS lookups and certificate (ACME) requests.
//
// Each function wraps one port and returns a value of the same interface
// whose calls each make one span, a child of the span in the call's
// context (the request's, see httpx.Config.TracerProvider). Given a nil
// TracerProvider a function returns its argument unchanged, so code that
// wires tracing unconditionally costs nothing when tracing is off.
//
// httpx wraps the ports of its Config itself when Config.TracerProvider is
// set; wrap the domain engine's Resolver and CertIssuer where the engine
// is configured (examples/server shows both). Nothing here touches
// OpenTelemetry's global providers.
//
// Spans carry no secrets: an API key's public id and an error's code, never
// a token, a key hash or a request body. A call whose error is a client's
// (not found, invalid, a conflict) ends its span unset; a store that is
// unavailable or failed marks it Error.
package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
)

// ScopeName is the instrumentation scope of every span made here and by
// httpx.
const ScopeName = "github.com/petstorekit/petstore"

// Tracer returns the tracer petstore uses from tp.
func Tracer(tp trace.TracerProvider) trace.Tracer { return tp.Tracer(ScopeName) }

// ErrorCodeKey is the attribute naming the petstore error code of a
// failed call ("not_found", "unavailable", ...).
const ErrorCodeKey = attribute.Key("petstore.error.code")

// End records err on span, if any, and ends it. Errors that are the
// service's fault (internal, unavailable) set the span's status to Error;
// a client's mistake is recorded by its code only.
func End(span trace.Span, err error) {
	if err != nil {
		code := petstore.ErrorCode(err)
		span.SetAttributes(ErrorCodeKey.String(code), attribute.String("error.type", code))
		if code == petstore.CodeInternal || code == petstore.CodeUnavailable || errors.Is(err, context.DeadlineExceeded) {
			span.SetStatus(codes.Error, petstore.ErrorMessage(err))
		}
	}
	span.End()
}

// call runs f in a child span named name.
func call[T any](ctx context.Context, t trace.Tracer, name string, f func(context.Context) (T, error), attrs ...attribute.KeyValue) (T, error) {
	ctx, span := t.Start(ctx, name, trace.WithAttributes(attrs...))
	v, err := f(ctx)
	End(span, err)
	return v, err
}

// call0 is call for a function with no result but its error.
func call0(ctx context.Context, t trace.Tracer, name string, f func(context.Context) error, attrs ...attribute.KeyValue) error {
	ctx, span := t.Start(ctx, name, trace.WithAttributes(attrs...))
	err := f(ctx)
	End(span, err)
	return err
}
