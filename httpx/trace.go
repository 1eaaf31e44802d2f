package httpx

import (
	"net/http"
	"net/netip"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore/tracing"
)

// propagator reads a caller's W3C traceparent and baggage; the global
// one is never used.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceConfig wraps the ports of cfg in spans (package tracing) when
// cfg.TracerProvider is set.
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
		cfg.Limiter = tracedLimiter{tracing.Limiter(cfg.Limiter, tp), cfg.Limiter}
	}
	return cfg
}

// tracedLimiter is a limiter whose decisions are traced, with the
// limiter itself for the ports that are not (Refunder, Estimator).
type tracedLimiter struct {
	RateLimiter
	inner RateLimiter
}

// untraced is the limiter itself, not traceConfig's wrapping.
func untraced(rl RateLimiter) any {
	if t, ok := rl.(tracedLimiter); ok {
		return t.inner
	}
	return rl
}

// traceRequests gives each request a server span after OpenTelemetry's
// HTTP conventions, with the client address, the key's public id and the
// status; a 5xx answer is an error. Without a provider it is no step.
func traceRequests(tp trace.TracerProvider, client func(*http.Request) netip.Addr, find func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tp == nil {
			return next
		}
		tracer := tracing.Tracer(tp)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// As the conventions say (see standardMethod).
			method, name := r.Method, r.Method
			if !standardMethod(method) {
				method, name = "_OTHER", "HTTP"
			}
			ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(method),
				semconv.URLPath(r.URL.Path), // never the query, which may hold secrets
				semconv.URLScheme(scheme(r)),
				semconv.UserAgentOriginal(r.UserAgent()),
			))
			defer span.End()
			next.ServeHTTP(w, r.WithContext(ctx))
			st := stateOf(ctx)
			if path := routePath(r, st, find); path != "" {
				span.SetName(name + " " + path)
				span.SetAttributes(semconv.HTTPRoute(path))
			}
			status := statusOf(st)
			span.SetAttributes(semconv.HTTPResponseStatusCode(status), semconv.ClientAddress(client(r).String()),
				attribute.String("petstore.request.id", st.id))
			if st.hasKey {
				span.SetAttributes(tracing.KeyIDKey.String(st.key.ID))
			}
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
				span.SetAttributes(attribute.String("error.type", strconv.Itoa(status)))
			}
		})
	}
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
