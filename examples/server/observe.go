package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
)

// observeFlags declares the flags of metrics, logs and the admin
// endpoint; the returned function stores them in cfg after parsing.
func observeFlags(fs *flag.FlagSet, env func(name, def string) string) func(cfg *config) error {
	metricsAddr := fs.String("metrics-addr", env("PETSTORE_METRICS_ADDR", ""), "serve GET /metrics (Prometheus) on this address only; empty: on the platform hosts of -addr (PETSTORE_METRICS_ADDR)")
	logFormat := fs.String("log-format", env("PETSTORE_LOG_FORMAT", "text"), "log lines on stderr as text (logfmt) or json (PETSTORE_LOG_FORMAT)")
	traceFile := fs.String("trace-file", env("PETSTORE_TRACE_FILE", ""), "write OpenTelemetry spans (each request, its store calls and rate-limit decision, DNS lookups, certificate requests) as JSON to this file, - for stderr; empty: no tracing (PETSTORE_TRACE_FILE)")
	adminFlag := fs.String("admin-addr", env("PETSTORE_ADMIN_ADDR", ""), "serve the operator endpoint (bans, usage) on this address, loopback when only :PORT is given, another address only with PETSTORE_ADMIN_TOKEN set; the bans and keys usage commands call it; empty: off (PETSTORE_ADMIN_ADDR)")
	// The admin token is read from the environment only: a flag's value
	// shows in ps and in -h.
	adminToken := env("PETSTORE_ADMIN_TOKEN", "")
	pprofAddr := fs.String("pprof-addr", env("PETSTORE_PPROF_ADDR", ""), "serve net/http/pprof's profiles under /debug/pprof/ on this loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); empty: off (PETSTORE_PPROF_ADDR)")
	return func(cfg *config) error {
		if *pprofAddr != "" && !isLoopbackAddr(*pprofAddr) {
			return fmt.Errorf("-pprof-addr %q: profiles are served on loopback only, such as 127.0.0.1:6060", *pprofAddr)
		}
		for _, f := range []struct{ name, addr string }{{"-metrics-addr", *metricsAddr}, {"-admin-addr", *adminFlag}, {"-pprof-addr", *pprofAddr}} {
			if err := checkListenAddr(f.addr); f.addr != "" && err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		if host, _, _ := net.SplitHostPort(adminAddr(*adminFlag)); *adminFlag != "" && !isLoopback(host) && adminToken == "" {
			return fmt.Errorf("-admin-addr %s is not a loopback address: set PETSTORE_ADMIN_TOKEN (a bearer token the bans and keys usage commands send) to serve the operator endpoint there", *adminFlag)
		}
		cfg.pprofAddr = *pprofAddr
		cfg.metricsAddr = *metricsAddr
		cfg.adminAddr = *adminFlag
		cfg.adminToken = adminToken
		if adminToken != "" {
			if err := petstore.CheckSecretStrength(adminToken); err != nil {
				return fmt.Errorf("PETSTORE_ADMIN_TOKEN: %s", petstore.ErrorMessage(err))
			}
		}
		if f := *traceFile; f != "" && f != "-" {
			if info, err := os.Stat(filepath.Dir(f)); err != nil || !info.IsDir() {
				return fmt.Errorf("-trace-file %s: its directory does not exist", f)
			}
		}
		cfg.traceFile = *traceFile
		switch *logFormat {
		case "text", "json":
			cfg.logFormat = *logFormat
		default:
			return fmt.Errorf("-log-format: want text or json, got %q", *logFormat)
		}
		return nil
	}
}

// checkListenAddr checks that addr can be a TCP listen address, host:port
// with a port number or a service name, so that a mistyped one is refused
// before the database is opened and a demo key made.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (or :port): %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	return nil
}

// isLoopbackAddr reports whether a listen address names a loopback host:
// a wildcard (":6060", "0.0.0.0:6060") or another interface is refused.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// pprofServer returns the server of net/http/pprof's handlers and its
// listener on addr (loopback, checked by the flag); run serves it and
// drains it at shutdown.
func pprofServer(addr string) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No /debug/pprof/cmdline: the command line may carry secrets given
	// as flags. Loopback is not enough against a DNS-rebinding page, so
	// the admin endpoint's guard (Host, Origin) stands in front.
	return &http.Server{Handler: adminGuard(mux, ln.Addr(), ""), ReadHeaderTimeout: 5 * time.Second}, ln, nil
}

// newLogger returns the server's logger writing to w in the -log-format.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// newTracerProvider returns the server's tracer provider (never the
// global one), exporting spans as JSON to -trace-file in batches, and the
// function that flushes and closes it; nil without -trace-file.
func newTracerProvider(path string) (trace.TracerProvider, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	w := io.Writer(os.Stderr)
	closeFile := func() error { return nil }
	if path != "-" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("-trace-file: %w", err)
		}
		w, closeFile = f, f.Close
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		closeFile()
		return nil, nil, fmt.Errorf("-trace-file: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		// Every request is recorded. The default sampler follows the
		// caller's traceparent, so any client could keep its requests
		// out of the file by sending its sampled flag off.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "petstore"))),
	)
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(ctx) // flushes what is batched
		closeFile()
	}, nil
}

// newRegistry returns the server's own metrics registry (never the global
// one), with the Go runtime's and the process's collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metricsHandler serves reg in the Prometheus text exposition format,
// uncompressed: one form, so that a snapshot of it serves every scraper.
// A collector that fails (the database is down: no domain counts) leaves
// out its metrics, not the others: the ones that tell of the outage.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, DisableCompression: true, ErrorHandling: promhttp.ContinueOnError})
}

// snapshot answers with a copy of next's answer to a plain GET of the
// same path, made at most once per every: a flood of requests costs one
// database query or ping a second, whatever its rate. The copy is made
// with the first waiting request's values but not its cancellation, so a
// client that hangs up does not leave a failed answer for the others.
type snapshot struct {
	next  http.Handler
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex // held while a copy is made: one at a time
	at     time.Time
	status int
	header http.Header
	body   []byte
}

func newSnapshot(next http.Handler, every time.Duration, now func() time.Time) *snapshot {
	return &snapshot{next: next, every: every, now: now}
}

func (s *snapshot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.body == nil || s.now().Sub(s.at) >= s.every {
		req, _ := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodGet, r.URL.Path, nil)
		rec := &recorded{header: http.Header{}}
		s.next.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.at, s.status, s.header, s.body = s.now(), rec.status, rec.header, rec.body.Bytes()
	}
	status, header, body := s.status, s.header, s.body
	s.mu.Unlock()
	for k, v := range header {
		w.Header()[k] = append([]string(nil), v...)
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// recorded is an answer kept in memory.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorded) Header() http.Header { return r.header }

func (r *recorded) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorded) Write(b []byte) (int, error) { return r.body.Write(b) }

// platformCollector reports what is read on each scrape rather than
// counted: custom domains by state, their certificates' expiry and
// whether the rate limiters' store answers.
type platformCollector struct {
	store    customdomain.Store
	certs    customdomain.CertIssuer // nil without -acme-ca
	limiters limiters
	logger   *slog.Logger
	timeout  time.Duration // of the database reads: -db-timeout
}

var (
	domainsDesc = prometheus.NewDesc("petstore_domains",
		"Custom domains by state (removed ones are not counted).", []string{"state"}, nil)
	certExpiryDesc = prometheus.NewDesc("petstore_certificate_expiry_seconds",
		"When a custom domain's certificate expires, in Unix seconds: alert on petstore_certificate_expiry_seconds - time() < 14 * 86400.", []string{"domain"}, nil)
	limiterUpDesc = prometheus.NewDesc("petstore_limiter_store_up",
		"1 while the rate limiters' counter store answers, 0 while any of them found it failing: limits are decided locally (or refused, failing closed).", nil, nil)
	limiterSubjectsDesc = prometheus.NewDesc("petstore_limiter_subjects",
		"Rate-limit subjects (keys and client addresses) this process holds in memory.", nil, nil)
	limiterEvictionsDesc = prometheus.NewDesc("petstore_limiter_evictions_total",
		"Client addresses the rate limiter forgot to make room for new ones; never one banned, striking or with a full window.", nil, nil)
	limiterAggregationDesc = prometheus.NewDesc("petstore_limiter_aggregation_level",
		"How the rate limiter counts IPv6 clients: 0 per /64, 1 per /48 while a flood of new addresses fills its memory.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c platformCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- domainsDesc
	ch <- certExpiryDesc
	ch <- limiterUpDesc
	ch <- limiterSubjectsDesc
	ch <- limiterEvictionsDesc
	ch <- limiterAggregationDesc
}

// Collect implements prometheus.Collector.
func (c platformCollector) Collect(ch chan<- prometheus.Metric) {
	up := 1.0
	if c.limiters.status().Degraded {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(limiterUpDesc, prometheus.GaugeValue, up)
	ls := c.limiters.stats()
	ch <- prometheus.MustNewConstMetric(limiterSubjectsDesc, prometheus.GaugeValue, float64(ls.Subjects))
	ch <- prometheus.MustNewConstMetric(limiterEvictionsDesc, prometheus.CounterValue, float64(ls.Evictions))
	ch <- prometheus.MustNewConstMetric(limiterAggregationDesc, prometheus.GaugeValue, float64(ls.Aggregation))

	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	entries, err := c.store.ListDomains(ctx, customdomain.DomainQuery{})
	if err != nil {
		c.logger.Warn("metrics: custom domains not listed", "err", err)
		ch <- prometheus.NewInvalidMetric(domainsDesc, err)
		return
	}
	counts := map[customdomain.Status]int{}
	// verified is a milestone in a domain's history, never a current status,
	// so it has no count.
	for _, s := range []customdomain.Status{customdomain.StatusPending, customdomain.StatusIssuing, customdomain.StatusActive,
		customdomain.StatusMisconfigured, customdomain.StatusFailed, customdomain.StatusReleased} {
		counts[s] = 0 // every state is reported, zero included
	}
	for _, e := range entries {
		counts[e.Status]++
		if c.certs == nil || (e.Status != customdomain.StatusActive && e.Status != customdomain.StatusIssuing && e.Status != customdomain.StatusMisconfigured) {
			continue
		}
		if st, err := c.certs.Status(ctx, e.Name); err == nil && !st.NotAfter.IsZero() {
			ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(st.NotAfter.Unix()), e.Name)
		}
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(domainsDesc, prometheus.GaugeValue, float64(n), string(s))
	}
}

// inflight counts the requests the server is answering, so shutdown can
// say how many it is draining.
type inflight struct{ n atomic.Int64 }

func (f *inflight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer f.n.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// collector exposes the count as petstore_http_requests_in_flight.
func (f *inflight) collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "petstore_http_requests_in_flight",
		Help: "Requests being answered now.",
	}, func() float64 { return float64(f.n.Load()) })
}

// metricsServer returns the server of reg alone and its listener on
// -metrics-addr, each scrape with a request id and an access log line, and
// no rate limit; run serves it and drains it at shutdown.
func metricsServer(addr string, reg *prometheus.Registry, auth petstore.Authenticator, logger *slog.Logger) (*http.Server, net.Listener, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", newSnapshot(metricsHandler(reg), time.Second, time.Now))
	h, err := httpx.Wrap(httpx.Config{Auth: auth, Logger: logger}, mux, "/metrics")
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	return newServer(h, logger), ln, nil
}

// exitOnSecondSignal exits at once on a SIGINT or SIGTERM that arrives
// after ctx (cancelled by the first one) is done, for an operator who
// does not want to wait for the drain. The log lines buffered by then
// (those of the requests already answered) are written out first.
func exitOnSecondSignal(ctx context.Context) {
	<-ctx.Done()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	s := <-ch
	why := fmt.Sprintf("second %v: exiting without waiting for requests in flight", s)
	// With -log-format json every line on stderr is JSON, this one too.
	l := exitLog.Load()
	if l != nil {
		l.Error("exiting", "err", why)
	}
	if logs := flushLog.Load(); logs != nil {
		_ = logs.Flush()
	}
	if l == nil {
		fmt.Fprintln(os.Stderr, "server:", why)
	}
	os.Exit(1)
}
