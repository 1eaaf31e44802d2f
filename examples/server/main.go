// Command server serves the Petstore /v1 API, the custom-domains dashboard
// and the edge that serves customers' domains: go run ./examples/server.
//
// It keeps pets and keys in a SQLite file by default (-db), counts rate
// limits in memory or in Redis (-redis), verifies custom domains over DNS
// and, with -acme-ca, obtains their certificates. With no keys stored and
// none given, it creates one demo key on the Pro plan and prints it once
// with a ready curl line. It drains in-flight requests on SIGINT or SIGTERM.
//
// "server [flags] keys create|list|revoke|unrevoke|set-plan ..." manages the keys
// of the configured database instead of serving. Servers cache
// authenticated keys; a revoke or a plan change reaches running servers
// within a second over Redis (-redis) or PostgreSQL LISTEN/NOTIFY, so the
// subcommand needs the servers' -db and -redis.
//
// Custom domains need a project on Pro or above with a successful deploy.
// "server [flags] projects list" shows each project (the projects of the
// stored keys) with its plan and last deploy; "server [flags] projects
// deploy PROJECT_ID" records a successful deploy. The demo key's project
// and those of -keys count as deployed; a project made by "keys create"
// starts undeployed unless given -deployed. A project below Pro keeps its
// domains, suspended: not served until it is back on Pro.
//
// "server [flags] bans list|lift KEY_ID|IP" and "server [flags] keys usage
// KEY_ID" show and lift bans and show a key's counts: on Redis directly
// with -redis, else through the running server's -admin-addr. Metrics are
// served at GET /metrics (or on -metrics-addr); the log goes to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/logbuf"
)

// defaultGCPercent is the server's GOGC when the environment sets none.
// The live heap is a few megabytes, so at Go's default of 100 the
// collector ran about thirty times a second under load; at 400 it runs a
// quarter as often, for a heap that peaks at five times the live one
// (docs/operating.md#memory).
const defaultGCPercent = 400

// setGCPercent sets defaultGCPercent unless GOGC is set, which rules, as
// GOMEMLIMIT does.
func setGCPercent(lookupEnv func(string) (string, bool)) {
	if _, set := lookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func main() {
	// go-redis would log every failed dial while Redis is down; the limiter
	// reports the outage itself, once per interval.
	redis.SetLogger(redislimit.QuietLogger{})
	// Request ids (UUID v7) take their random bits from a pool filled in
	// batches rather than one read of the system's generator each: they
	// must be unique, not secret.
	uuid.EnableRandPool()
	// The MySQL driver and bun's MySQL dialect log through globals (the
	// driver's logger and the log package's): their lines go to the
	// server's log, in its -log-format.
	log.SetFlags(0)
	log.SetOutput(libraryLog{})
	_ = mysql.SetLogger(log.New(libraryLog{}, "mysql: ", 0))
	setGCPercent(os.LookupEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go exitOnSecondSignal(ctx)
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.As(err, new(loggedError)) {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
		if usage, ok := usageOf(err); ok {
			if usage != "" {
				fmt.Fprintln(os.Stderr, usage)
			}
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// loggedError is an error run has written to the log as the last line
// (with -log-format json), for main not to print it again.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// serverLog holds the log of the running server, where libraryLog
// writes.
var serverLog atomic.Pointer[slog.Logger]

// libraryLog writes each line that a library logs through a global logger
// as a WARN line of the running server's log; to stderr before there is
// one.
type libraryLog struct{}

func (libraryLog) Write(p []byte) (int, error) {
	l := serverLog.Load()
	if l == nil {
		return os.Stderr.Write(p)
	}
	l.Warn(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// flushLog holds the log buffer of the running server, for
// exitOnSecondSignal to write out before the process exits.
var flushLog atomic.Pointer[logbuf.Writer]

// exitLog holds the running server's logger when the error the server
// exits with is a log line (-log-format json); nil when it is printed on
// stderr as text.
var exitLog atomic.Pointer[slog.Logger]

// shutdownGrace bounds how long in-flight requests may take to finish.
const shutdownGrace = 15 * time.Second

// run serves until ctx is done, then shuts down gracefully; or, given the
// keys subcommand, runs it and returns. stdout gets only what is printed
// for a person (the demo key, where the server listens, that it drains);
// the log goes to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseConfig(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage asked for is printed: a success
	}
	if err != nil {
		if _, ok := usageOf(err); !ok {
			err = usageError{err: err}
		}
		return err
	}
	if cfg.version || (len(cfg.command) > 0 && cfg.command[0] == "version") {
		info, ok := debug.ReadBuildInfo()
		printVersion(stdout, info, ok)
		return nil
	}
	// -db memory lives in the serving process only: a subcommand that
	// manages the database would work on a store of its own, print a key
	// no server accepts, or revoke nothing. Only "keys usage" through
	// -admin-addr escapes that: it asks the server.
	if cfg.db == "memory" && len(cfg.command) > 0 && (cfg.command[0] == "keys" || cfg.command[0] == "projects") && !(isAdminCommand(cfg.command) && cfg.redis == "") {
		return usageError{err: fmt.Errorf("%s: -db memory keeps keys and projects inside the serving process, out of this command's reach; "+
			"give the server a database (-db sqlite:PATH, postgres://… or mysql://…) to manage them", cfg.command[0])}
	}
	// A malformed subcommand is refused before the database is opened, so
	// that it neither makes the default SQLite file nor migrates anything.
	if err := checkCommand(ctx, cfg); err != nil {
		return err
	}
	// Log lines are buffered and written out every 100 ms: one write
	// system call per request was most of the access log's cost. What
	// the program prints for a person goes through say, which flushes the
	// log lines before it so the two keep their order.
	logs := logbuf.New(stderr, logbuf.DefaultInterval)
	defer logs.Close()
	flushLog.Store(logs)
	logger := newLogger(cfg.logFormat, logs)
	serverLog.Store(logger)
	if cfg.logFormat == "json" {
		// Every line on stderr is JSON: the error the server exits with,
		// too, is a log line.
		exitLog.Store(logger)
		defer func() {
			// A malformed command line is for the person who typed it.
			if _, usage := usageOf(err); err != nil && !usage {
				logger.Error("exiting", "err", err)
				err = loggedError{err}
			}
		}()
	}
	say := func(format string, args ...any) {
		logs.Flush()
		fmt.Fprintf(stdout, format, args...)
	}
	// A signal while the server is still starting (opening or migrating
	// the database, loading the custom domains, making the demo key) is
	// an operator stopping it: a clean stop, as once it serves, not a
	// failure naming the step it cut short. A command so interrupted
	// did not do its work, and fails. signalled is the caller's ctx (the
	// one derived below is cancelled on the way out); whether it was done
	// is judged as the start returns, before the closing, so a signal that
	// comes while a failed start closes its pool leaves the failure one.
	signalled, listening := ctx, false
	var judged, stoppedDuringStart bool
	judge := func() {
		if !judged {
			judged = true
			stoppedDuringStart = err != nil && len(cfg.command) == 0 && !listening && signalled.Err() != nil
		}
	}
	defer func() {
		if judge(); stoppedDuringStart {
			logger.Info("stopped during start", "interrupted", err.Error())
			say("petstore: stopped during start\n")
			err = nil
		}
	}()

	// Only "keys usage" on Redis reads the database (for the key's plan):
	// through -admin-addr the running server answers, and bans are Redis's.
	if isAdminCommand(cfg.command) && (cfg.redis == "" || cfg.command[0] == "bans") {
		return runAdmin(ctx, cfg, nil, stdout)
	}
	store, closeStore, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	// stopBy is when a shutdown must be over, set once it starts; closing
	// the store and the rest waits no later (see closeBy).
	var stopBy time.Time
	defer func() {
		judge()
		closeBy(closeDeadline(stopBy, err, cfg), closeStore)
	}()
	// A command waits on the database as a request does: -db-timeout for
	// all its calls, so that one on a database that stopped answering
	// ends with an error rather than waits for ever.
	switch {
	case len(cfg.command) > 0 && cfg.command[0] == "projects":
		return startStep(ctx, cfg.dbBound(), 0, func(ctx context.Context) error {
			return runProjects(ctx, store, cfg.command[1:], stdout)
		})
	case isAdminCommand(cfg.command):
		return startStep(ctx, cfg.dbBound(), 0, func(ctx context.Context) error {
			return runAdmin(ctx, cfg, petstore.NewKeys(store), stdout)
		})
	case len(cfg.command) > 0:
		return startStep(ctx, cfg.dbBound(), 0, func(ctx context.Context) error {
			return runKeys(ctx, cfg, store, stdout)
		})
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	app, err := build(ctx, cfg, store, logger)
	if err != nil {
		return err
	}
	defer func() {
		judge()
		closeBy(closeDeadline(stopBy, err, cfg), app.close)
	}()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	var busy inflight
	app.registry.MustRegister(busy.collector())
	servers := []*http.Server{newServer(busy.wrap(app.httpHandler), logger)}
	listeners := []net.Listener{ln}
	if cfg.tlsAddr != "" {
		tln, err := net.Listen("tcp", cfg.tlsAddr)
		if err != nil {
			ln.Close()
			return err
		}
		srv := newServer(busy.wrap(app.edge), logger)
		srv.TLSConfig = app.tlsConfig
		servers = append(servers, srv)
		listeners = append(listeners, tln)
	}

	// The operator's listeners too are open before a demo key is made
	// and shown, and drained with the others at shutdown.
	sideListener := func(srv *http.Server, l net.Listener, err error) (net.Addr, error) {
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, err
		}
		servers, listeners = append(servers, srv), append(listeners, l)
		return l.Addr(), nil
	}
	var maddr, paddr, aaddr net.Addr
	if cfg.metricsAddr != "" {
		if maddr, err = sideListener(metricsServer(cfg.metricsAddr, app.registry, app.auth, logger)); err != nil {
			return err
		}
	}
	if cfg.pprofAddr != "" {
		if paddr, err = sideListener(pprofServer(cfg.pprofAddr)); err != nil {
			return err
		}
	}
	if cfg.adminAddr != "" {
		ops := adminOps{admin: app.limitAdmin, keys: app.keys, now: time.Now, timeout: cfg.dbTimeout}
		if aaddr, err = sideListener(adminServer(cfg.adminAddr, cfg.adminToken, ops, logger)); err != nil {
			return err
		}
	}

	base := "http://" + displayAddr(ln.Addr())
	secret, err := demoKey(ctx, cfg, app.keys, store)
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	if secret != "" {
		// Shown once, on purpose: the store keeps only its hash.
		say("petstore: demo API key (Pro plan), shown only now: %s\n", secret)
		say("try: curl -H 'Authorization: Bearer %s' %s/v1/pets\n", secret, base)
	}
	say("petstore: custom domains dashboard at %s/dashboard/ (paste a key); customers point CNAMEs at %s\n", base, cfg.cnameTarget)
	if cfg.tlsAddr != "" {
		say("petstore: HTTPS for custom domains on %s\n", listeners[1].Addr())
	}
	if maddr != nil {
		say("petstore: metrics at http://%s/metrics\n", displayAddr(maddr))
	}
	if paddr != nil {
		say("petstore: profiles at http://%s/debug/pprof/\n", paddr)
	}
	if aaddr != nil {
		say("petstore: operator endpoint at http://%s/admin/ (bans, usage)\n", aaddr)
	}
	// Printed last: it tells scripts and tests that startup is complete.
	say("petstore: listening on %s/v1 (OpenAPI document: %s/v1/openapi.json)\n", base, base)
	listening = true

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			if srv.TLSConfig != nil {
				errc <- srv.ServeTLS(listeners[i], "", "")
				return
			}
			errc <- srv.Serve(listeners[i])
		}()
	}
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		n, s := busy.n.Load(), "s"
		if n == 1 {
			s = ""
		}
		say("petstore: shutting down: draining %d request%s in flight (at most %v; signal again to exit now)\n", n, s, shutdownGrace)
	}
	stopBy = time.Now().Add(shutdownGrace)
	sctx, scancel := context.WithDeadline(context.Background(), stopBy)
	defer scancel()
	// Every listener, the operator's too, is drained even when one fails
	// to shut down in time.
	var shutdownErrs []error
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			shutdownErrs = append(shutdownErrs, err)
		}
	}
	if err := errors.Join(shutdownErrs...); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	say("petstore: stopped\n")
	return nil
}

// closeBy runs fn and waits for it until deadline at most (not at all
// when the deadline has passed; for ever when it is zero): a store or
// service whose link is paused must not keep a stopping process alive,
// and closing PostgreSQL's pool waits 5 s on each statement it frees
// there.
func closeBy(deadline time.Time, fn func()) {
	if deadline.IsZero() {
		fn()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// closeDeadline is when closing the store or the rest must be over:
// stopBy once a shutdown has begun; -db-timeout from now after a start
// or a command failed with err, since the database may be what failed
// and a pool closing on a paused link waits seconds for each statement
// it frees; none otherwise.
func closeDeadline(stopBy time.Time, err error, cfg config) time.Time {
	if stopBy.IsZero() && err != nil {
		return time.Now().Add(cfg.dbTimeout)
	}
	return stopBy
}

// newServer returns an http.Server with timeouts that keep slow or idle
// clients from holding connections forever.
func newServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// displayAddr turns a wildcard listen address into one a curl can reach.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		port := 0
		if ok {
			port = tcp.Port
		}
		return fmt.Sprintf("localhost:%d", port)
	}
	return tcp.String()
}
