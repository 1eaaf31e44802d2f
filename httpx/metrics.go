package httpx

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/tracing"
)

// metrics holds an API's or a dashboard's collectors, which may share a
// registry and then the collectors (docs/operating.md lists them).
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	causes    *prometheus.CounterVec
	replays   prometheus.Counter
}

// newMetrics registers the collectors with reg, or reuses those another
// API or dashboard registered there; every label value starts at 0.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	counters := func(name, help string, labels ...string) (*prometheus.CounterVec, error) {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
	}
	m := &metrics{}
	var err error
	if m.requests, err = counters("petstore_http_requests_total", "HTTP requests answered, by route pattern, method and status code.", "route", "method", "code"); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "petstore_http_request_duration_seconds",
		Help:    "Time from a request's arrival to its handler's return, by route pattern and method.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method"})); err != nil {
		return nil, err
	}
	if m.decisions, err = counters("petstore_ratelimit_decisions_total", "Rate-limit decisions: allowed, limited, banned, fallback (decided locally while the shared store fails), unavailable (503).", "result"); err != nil {
		return nil, err
	}
	if m.causes, err = counters("petstore_store_errors_total", "Requests failed by a store or the server itself, by cause: timeout, unavailable, internal, panic.", "cause"); err != nil {
		return nil, err
	}
	if m.replays, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "petstore_idempotency_replays_total", Help: "POST requests answered with the stored response of an earlier one with the same Idempotency-Key."})); err != nil {
		return nil, err
	}
	for _, result := range []string{"allowed", "limited", "banned", "fallback", "unavailable"} {
		m.decisions.WithLabelValues(result)
	}
	for _, cause := range []string{causeTimeout, causeUnavailable, causeInternal, causePanic} {
		m.causes.WithLabelValues(cause)
	}
	return m, nil
}

// Why a store or the server failed a request (state.cause): the
// store_error of the access log and the cause label of the metrics.
const (
	causeTimeout     = "timeout"     // a store call outlived Config.Timeout
	causeUnavailable = "unavailable" // a store said it cannot answer
	causeInternal    = "internal"    // any other failure
	causePanic       = "panic"
)

// register registers c, or returns the equal collector registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// measure counts each request by route, method and status, times it,
// and counts why a store failed it; with no metrics it is no step at all.
func measure(m *metrics, find func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if m == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			st := stateOf(r.Context())
			route := cmp.Or(routePath(r, st, find), "unmatched")
			method := metricMethod(r.Method)
			m.requests.WithLabelValues(route, method, strconv.Itoa(statusOf(st))).Inc()
			m.duration.WithLabelValues(route, method).Observe(time.Since(st.start).Seconds())
			if st.cause != "" {
				m.causes.WithLabelValues(st.cause).Inc()
			}
			if w.Header().Get("Idempotent-Replayed") != "" {
				m.replays.Inc()
			}
		})
	}
}

// metricMethod is m, or OTHER for a method HTTP does not define.
func metricMethod(m string) string {
	if standardMethod(m) {
		return m
	}
	return "OTHER"
}

// standardMethod reports whether m is a method HTTP defines: any other is
// the client's own word, which no label or span name may carry, lest a
// client grow the label set or the span names without bound.
func standardMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return true
	}
	return false
}

// decision counts one rate-limit decision, named as its span names it.
func (m *metrics) decision(d ratelimit.Decision, err error) {
	if m == nil {
		return
	}
	result := "unavailable"
	if err == nil {
		result = tracing.DecisionResult(d)
	}
	m.decisions.WithLabelValues(result).Inc()
}
