package httpx

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore/tracing"
)

// propagator reads a caller's W3C traceparent and baggage, so the request
// span joins the caller's trace. OpenTelemetry's global propagator is not
// used: nothing here depends on global state.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceConfig wraps the ports of cfg in spans (package tracing) when
// cfg.TracerProvider is set: authentication, the rate limiter's decision,
// the pets and orders services and the Idempotency-Key store.
func traceConfig(cfg Config) Config {
	tp := cfg.TracerProvider
	if tp == nil {
		return cfg
	}
	cfg.Service = tracing.PetService(cfg.Service, tp)
	cfg.Orders = tracing.OrderService(cfg.Orders, tp)
	cfg.Auth = tracing.Authenticator(cfg.Auth, tp)
	cfg.Idempotency = tracing.IdempotencyStore(cfg.Idempotency, tp)
	if cfg.Limiter != nil {
		cfg.Limiter = tracing.Limiter(cfg.Limiter, tp)
	}
	return cfg
}

// startSpan starts the request's server span, a child of the caller's
// span when the request carries a traceparent. Its name is the method
// until the route is known (OpenTelemetry's HTTP conventions).
func (c *chain) startSpan(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	attrs := [...]attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(r.Method),
		semconv.URLPath(r.URL.Path), // never the query, which may hold secrets
		semconv.URLScheme(scheme(r)),
		semconv.UserAgentOriginal(r.UserAgent()),
	}
	return c.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs[:]...))
}

// endSpan names the request's span after its route, records the client
// address (as the rate limiter counted it), the key's public id and the
// status, and ends it; a 5xx answer is an error (a 4xx is the client's).
func (c *chain) endSpan(r *http.Request, info *requestInfo, route string) {
	span := info.span
	status := info.sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	if route != "" {
		// The route pattern may start with a method ("GET /v1/pets"):
		// http.route is the path part.
		path := route
		for i := 0; i < len(route); i++ {
			if route[i] == ' ' {
				path = route[i+1:]
				break
			}
		}
		span.SetName(r.Method + " " + path)
		span.SetAttributes(semconv.HTTPRoute(path))
	}
	span.SetAttributes(
		semconv.HTTPResponseStatusCode(status),
		semconv.ClientAddress(c.client(r, info).String()),
		attribute.String("petstore.request.id", info.id),
	)
	if info.hasKey {
		span.SetAttributes(tracing.KeyIDKey.String(info.key.ID))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
		span.SetAttributes(attribute.String("error.type", itoa(int64(status))))
	}
	span.End()
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
