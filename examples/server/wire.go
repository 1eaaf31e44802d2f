package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/dnsconfig"
	"github.com/petstorekit/petstore/adapters/dnsresolver"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/adapters/pgfeed"
	"github.com/petstorekit/petstore/adapters/redisfeed"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/httpx/dashboard"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/keycache"
	"github.com/petstorekit/petstore/keyscli"
	"github.com/petstorekit/petstore/ratelimit"
	"github.com/petstorekit/petstore/tracing"
	"github.com/petstorekit/petstore/webhook"
)

// backend is everything the server keeps: pets, keys, store orders,
// idempotency records, certificates and custom domains. bunstore and
// memstore implement it all.
type backend interface {
	petstore.Store
	petstore.OrderStore
	petstore.IdempotencyStore
	blobs.Store
	customdomain.Store
	DeployStore
	webhook.Store
}

var (
	_ backend = (*bunstore.Store)(nil)
	_ backend = (*memstore.Store)(nil)
)

// openStore opens the -db database, migrating it when -migrate is set.
// "memory" is adapters/memstore: everything in this process, no SQL, gone
// when it exits. The PostgreSQL and MySQL pools are capped at
// -db-max-conns, so one busy server cannot take every connection the
// database has: requests beyond the cap queue here, within -db-timeout.
func openStore(ctx context.Context, cfg config) (backend, func(), error) {
	if cfg.db == "memory" {
		return memstore.New(), func() {}, nil
	}
	// The first answer is awaited for -start-timeout: a database that
	// does not answer at all (a black hole) must not leave the server, or
	// a keys command, starting without a word.
	openCtx, cancel := context.WithTimeout(ctx, cfg.start.d)
	db, err := bunopen.Open(openCtx, cfg.db)
	timedOut := errors.Is(openCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil && timedOut {
		return nil, nil, fmt.Errorf("-db %s: no answer within %s %v: %w", bunopen.Redact(cfg.db), cfg.start.flag, cfg.start.d, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-db %s: %w", bunopen.Redact(cfg.db), err)
	}
	if t, _ := bunopen.Parse(cfg.db); t.Kind == bunopen.KindPostgres || t.Kind == bunopen.KindMySQL {
		db.SetMaxOpenConns(cfg.dbMaxConns)
		db.SetMaxIdleConns(cfg.dbMaxConns)
	}
	if cfg.migrate {
		if err := migrateStore(ctx, cfg, db); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	return bunstore.New(db), func() { db.Close() }, nil
}

// migrateStore runs the schema migrations within -migrate-timeout: a
// database that answered the first ping and then stopped answering (or a
// lock that is never granted) must not hold the server, or a command,
// at start forever.
func migrateStore(ctx context.Context, cfg config, db *bun.DB) error {
	mctx, cancel := context.WithTimeout(ctx, cfg.migrateTimeout)
	defer cancel()
	err := bunstore.Migrate(mctx, db)
	if err != nil && errors.Is(mctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("migrate %s: not done within -migrate-timeout %v: %w", bunopen.Redact(cfg.db), cfg.migrateTimeout, err)
	}
	if err != nil {
		return fmt.Errorf("migrate %s: %w", bunopen.Redact(cfg.db), err)
	}
	return nil
}

// app is the assembled server: handlers and what must be closed.
type app struct {
	httpHandler http.Handler // the -addr listener: edge plus ACME HTTP-01
	edge        http.Handler // the -tls-addr listener
	tlsConfig   *tls.Config  // nil without -acme-ca
	registry    *prometheus.Registry
	limitAdmin  ratelimit.Admin // the rate limiter's store, for operators
	keys        *petstore.Keys
	auth        petstore.Authenticator // keys, cached
	closers     []func()
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// build wires keys, limits, the pets API, the domain engine, certificates,
// the dashboard and the edge. Background work stops when ctx is done.
// logger writes the log, the access log's lines included.
func build(ctx context.Context, cfg config, store backend, logger *slog.Logger) (*app, error) {
	a := &app{registry: newRegistry()}
	tp, closeTracing, err := newTracerProvider(cfg.traceFile)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, closeTracing)
	feed, closeFeed, err := openFeed(cfg)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, closeFeed)
	lims, err := newLimiters(cfg, logger)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, lims.close)
	a.limitAdmin = lims.admin
	limiter := lims.api
	// A client the limiter refuses costs the key store at most a lookup a
	// second; its cached key is still served.
	refused := func(c netip.Addr) bool { return limiter.Refusing(httpx.LimitSubjects(c.String())[0]) }
	keys, auth := keycache.NewKeys(store, feed, keycache.Config{Refused: refused}, func(err error) {
		logger.Warn("key change not published: other processes apply it when their cached copy expires", "err", err)
	})
	a.auth = auth
	// One subscription for both: revoked keys leave the key cache, and a
	// domain removed through another process stops being served here
	// within milliseconds. It starts before the engine exists, so the
	// engine's share is handed over once it does (its initial Refresh
	// covers what came before).
	var engine atomic.Pointer[customdomain.Engine]
	cache := petCache(ctx, cfg, feed, store)
	// With two feeds for key changes, the key cache trusts what it holds
	// only while both are live: a revoke missed on either is as bad.
	keysFromFeed, keysFromDatabase := auth.Apply, auth.Apply
	if followsDatabaseFeed(cfg) {
		both := changefeed.AllLive(2, auth.Apply)
		keysFromFeed, keysFromDatabase = both[0], both[1]
	}
	if feed != nil {
		go followFeed(ctx, feed, logger, keysFromFeed, cache.Apply, func(c changefeed.Change) {
			if e := engine.Load(); e != nil {
				e.Apply(c)
			}
		})
	}
	if err := followDatabaseFeed(ctx, cfg, logger, keysFromDatabase, a); err != nil {
		return nil, err
	}
	if err := ensureOperatorKeys(ctx, cfg.start, keys, cfg.keys, store, logger); err != nil {
		return nil, err
	}
	a.keys = keys

	api, err := httpx.New(httpx.Config{
		Service:        petstore.NewService(store),
		Auth:           auth,
		Logger:         logger,
		Limiter:        limiter,
		TrustedProxies: cfg.trustedProxies,
		Idempotency:    store,
		Orders:         petstore.NewOrderService(store),
		Cache:          cache,
		Timeout:        storeTimeout(cfg),
		Metrics:        a.registry,
		TracerProvider: tp,

		IETFRateLimitHeaders: cfg.ietfHeaders,
	})
	if err != nil {
		return nil, err
	}

	// The engine and the issuer know each other: the issuer reports
	// certificate changes to the engine, the engine asks the issuer for
	// certificates. eng is set before anything can call back.
	var eng *customdomain.Engine
	nameservers := dnsresolver.New(cfg.dnsResolvers...)
	resolver := tracing.Resolver(nameservers, tp)
	// The platform's own DNS: the zones "Configure DNS for me" writes,
	// and the DCV zone where DNS-01 records go.
	var dnsProvider dnsconfig.Provider
	if cfg.dnsProvider != nil {
		p, closeDNS, err := cfg.dnsProvider.open()
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closeDNS)
		dnsProvider = p
	}
	var issuer *acme.Issuer
	if cfg.acmeCA != "" {
		if issuer, err = newIssuer(cfg, store, resolver, dnsProvider, logger, func() *customdomain.Engine { return eng }); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() { issuer.Close() })
		a.tlsConfig = issuer.TLSConfig()
	}
	hooks, err := startWebhooks(ctx, cfg, store, logger)
	if err != nil {
		return nil, err
	}
	ecfg := customdomain.EngineConfig{
		Store:           store,
		Projects:        projectsOf(keys, store),
		Resolver:        resolver,
		CNAMETarget:     cfg.cnameTarget,
		EdgeIPs:         cfg.edgeIPs,
		PlatformDomains: nonIPHosts(cfg.platformHosts),
		Feed:            feed,
		Logger:          logger,

		MaxDomainsPerProject: cfg.maxDomains,
		RecheckActive:        cfg.recheck,
		DriftGrace:           cfg.driftGrace,
		DCVZone:              cfg.acmeDCVZone,
		CDNs:                 cfg.cdns,
		Events:               domainEvents{hooks: hooks, timeout: cfg.dbTimeout},
		HandOffTimeout:       cfg.eventTimeout,
	}
	if issuer != nil {
		ecfg.CertIssuer = tracing.CertIssuer(issuer, tp)
	}
	if dnsProvider != nil {
		// The platform's DNS serves every project: which names it can
		// write is the zones' business (dnsconfig.Zones.Manages).
		zones := dnsconfig.NewZones(dnsProvider, cfg.dnsProvider.zones...)
		ecfg.DNS = func(string) customdomain.DNSConfigurator { return zones }
	}
	if eng, err = customdomain.New(ecfg); err != nil {
		return nil, err
	}
	// Without -edge-ips, Refresh first resolves the CNAME target (A and
	// AAAA), which waits on each nameserver, not on the database.
	var lookups time.Duration
	if len(cfg.edgeIPs) == 0 {
		lookups = 2 * time.Duration(len(nameservers.Servers())) * dnsresolver.DefaultTimeout
	}
	if err := startStep(ctx, cfg.start, lookups, eng.Refresh); err != nil {
		return nil, fmt.Errorf("load custom domains: %w", err)
	}
	engine.Store(eng)
	go func() {
		if err := eng.Run(ctx); err != nil && ctx.Err() == nil {
			logger.Error("domain engine stopped", "err", err)
		}
	}()

	dash, err := dashboard.New(dashboard.Config{
		Engine:         eng,
		Webhooks:       hooks,
		Auth:           auth,
		Logger:         logger,
		Limiter:        limiter,
		TrustedProxies: cfg.trustedProxies,
		Metrics:        a.registry,

		IETFRateLimitHeaders: cfg.ietfHeaders,
		TracerProvider:       tp,
		Usage:                limiter,
	})
	if err != nil {
		return nil, err
	}
	platform := http.NewServeMux() // the API's paths never reach it (apiPaths)
	platform.Handle("/dashboard/", dash)
	platform.Handle("/dashboard", http.RedirectHandler("/dashboard/", http.StatusMovedPermanently))
	platform.Handle("GET /healthz", health(lims))
	// /readyz pings the database and /metrics reads it: each is answered
	// from a copy made at most once a second, and each address spends its
	// public budget on them, as on the OpenAPI document (issue 26).
	probes := http.NewServeMux()
	dbCheck, err := newDBProbe(ctx, store, cfg)
	if err != nil {
		return nil, err
	}
	if dbCheck != nil {
		a.closers = append(a.closers, dbCheck.close)
	}
	probes.Handle("GET /readyz", newSnapshot(ready(dbCheck, lims, cfg), time.Second, time.Now))
	if cfg.metricsAddr == "" {
		probes.Handle("GET /metrics", newSnapshot(metricsHandler(a.registry), time.Second, time.Now))
	}
	limitedProbes, err := httpx.Wrap(httpx.Config{Auth: auth, Logger: logger, Limiter: lims.probes,
		TrustedProxies: cfg.trustedProxies, TracerProvider: tp, Metrics: a.registry}, probes, "/readyz", "/metrics")
	if err != nil {
		return nil, err
	}
	platform.Handle("GET /readyz", limitedProbes)
	platform.Handle("/", notFound())
	platform.Handle("/healthz", onlyGET())
	platform.Handle("/readyz", onlyGET())
	pc := platformCollector{store: store, limiters: lims, logger: logger, timeout: cfg.dbTimeout}
	if issuer != nil {
		pc.certs = issuer
	}
	a.registry.MustRegister(pc)
	if cfg.metricsAddr == "" {
		platform.Handle("GET /metrics", limitedProbes)
		platform.Handle("/metrics", onlyGET())
	}

	var sites sync.Map // projectID -> http.Handler, one site per project
	ecfgEdge := edge.Config{
		PlatformHosts: cfg.platformHosts,
		Platform:      apiPaths(api, platform),
		UnknownHostHint: "it is neither one of -platform-hosts (PETSTORE_PLATFORM_HOSTS: add the name there to serve the API and dashboard at it) " +
			"nor an active custom domain (add and verify it on the dashboard to serve a project at it)",
		Router:     eng,
		Challenges: eng,
		Site: func(projectID string) http.Handler {
			if h, ok := sites.Load(projectID); ok {
				return h.(http.Handler)
			}
			h, _ := sites.LoadOrStore(projectID, projectSite(projectID, api))
			return h.(http.Handler)
		},
		Logger: logger,
	}
	if cfg.tlsAddr != "" {
		ecfgEdge.RedirectScheme = "https"
	}
	if a.edge, err = edge.New(ecfgEdge); err != nil {
		return nil, err
	}
	a.httpHandler = a.edge
	if issuer != nil {
		a.httpHandler = issuer.HTTPHandler(a.edge) // answers HTTP-01 challenges
	}
	return a, nil
}

// bound is how long a step may wait, and the flag that set it, which the
// step's error names.
type bound struct {
	flag string
	d    time.Duration
}

// dbBound is -db-timeout, the bound of a command's calls.
func (c config) dbBound() bound { return bound{flag: "-db-timeout", d: c.dbTimeout} }

// startStep runs step, one of the start's calls to the database or a
// whole command, within b (-start-timeout, or -db-timeout) and slack for
// what else it waits on: a database that answered the first ping and the
// migrations, then stopped answering (a paused link), must make the
// server or the command exit with an error naming the bound, not leave
// it waiting for ever without a word.
func startStep(ctx context.Context, b bound, slack time.Duration, step func(context.Context) error) error {
	sctx, cancel := context.WithTimeout(ctx, b.d+slack)
	defer cancel()
	err := step(sctx)
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("no answer within %s %v: %w", b.flag, b.d, err)
	}
	return err
}

// petCache returns the cache of encoded pages and pets where it can be
// exact in this process and bounded across processes: on -db memory,
// which no other process writes; with a change feed, over which the
// processes sharing a database tell each other of their creates; and on
// SQLite, whose own counters tell of any other process's commit
// (bunstore's WatchChanges, within 100 ms). Otherwise (MySQL without
// -redis) a process cannot learn of another's create, so nothing is
// cached (nil).
func petCache(ctx context.Context, cfg config, feed changefeed.Feed, store backend) *httpx.Cache {
	if feed != nil || cfg.db == "memory" {
		return httpx.NewCache(feed)
	}
	s, ok := store.(*bunstore.Store)
	if t, err := bunopen.Parse(cfg.db); !ok || err != nil || t.Kind != bunopen.KindSQLite {
		return nil
	}
	cache := httpx.NewCache(nil)
	go func() { _ = s.WatchChanges(ctx, 0, cache.Apply) }()
	return cache
}

// notFound answers the platform hosts' paths that nothing serves with a
// JSON Error, as every answer of the server is.
func notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, petstore.Errorf(petstore.CodeNotFound, "no such path: %s; the API is under /v1/, such as /v1/pets", clip(r.URL.Path)))
	})
}

// onlyGET answers another method than GET (or HEAD) on a path that only
// serves GET: 405 with Allow, a JSON Error.
func onlyGET() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		httpx.WriteError(w, r, petstore.Errorf(petstore.CodeMethodNotAllowed, "method %s is not allowed here; use GET", r.Method))
	})
}

// health answers GET /healthz for load balancers and operators. It stays
// 200 while the rate limiter fails open (the API is up), but says so:
// degraded means the shared counter store failed, as any of the server's
// limiters last found it (limiters.status), so requests are decided by
// this process's local fallback, with the same limits.
func health(lims limiters) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := lims.status()
		httpx.WriteJSON(w, http.StatusOK, map[string]any{
			"status": "ok",
			"rateLimit": map[string]any{
				"degraded":      st.Degraded,
				"storeFailures": st.Failures,
			},
		})
	})
}

// storeTimeout is the deadline of a request's store calls: -db-timeout
// for a database; none for memory, which waits on nothing but itself, so
// a timer per request would buy nothing.
func storeTimeout(cfg config) time.Duration {
	if cfg.db == "memory" {
		return 0
	}
	return cfg.dbTimeout
}

// readyTimeout bounds /readyz's database ping (-db-timeout when that is
// shorter): a probe must get its answer well within its own timeout,
// Kubernetes' default of 1 s, and a database that takes longer to answer
// a ping is not one to send traffic to. A longer -db-timeout, for
// requests, must not make the probe time out instead of answering 503.
const readyTimeout = 500 * time.Millisecond

// ready answers GET /readyz for load balancers: 503 while a dependency
// the API cannot work without is unreachable, naming it, and 200
// otherwise. /healthz stays a liveness check (the process answers). The
// database must answer a ping within readyTimeout; Redis counts only when
// the limiter fails closed, since failing open serves without it.
//
// Redis's state is the one all the server's limiters found
// (limiters.status).
func ready(db *dbProbe, lims limiters, cfg config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checks := map[string]string{}
		var failing []string
		if db != nil {
			checks["database"] = db.ping(r.Context(), min(readyTimeout, cfg.dbTimeout))
			if checks["database"] == "unreachable" {
				failing = append(failing, "database")
			}
		}
		if cfg.redis != "" {
			// Failing open (or slow), limits are decided locally: still
			// serving, so only an unreachable Redis in fail-closed mode
			// makes the server unready.
			st := lims.status()
			switch {
			case !st.Ready():
				checks["redis"] = "unreachable since " + st.Since.UTC().Format(time.RFC3339)
				failing = append(failing, "redis")
			case st.Degraded:
				checks["redis"] = "degraded since " + st.Since.UTC().Format(time.RFC3339) + ": limits decided in this process"
			default:
				checks["redis"] = "ok"
			}
		}
		if len(failing) > 0 {
			w.Header().Set("Retry-After", "2")
			httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{
				"code":    petstore.CodeUnavailable,
				"message": "not ready: " + strings.Join(failing, ", ") + " unreachable",
				"status":  http.StatusServiceUnavailable,
				"checks":  checks,
			})
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "checks": checks})
	})
}

// dbProbe is how /readyz asks the database whether it answers. On
// PostgreSQL and MySQL it pings over a pool of its own, of one
// connection, opened at start and kept: a burst that holds every one of
// the store's -db-max-conns connections must not hide a database that
// stopped answering until the burst's requests give up (-db-timeout),
// and a probe must not have to dial within its 500 ms, which a link with
// a long round trip can take longer than. On SQLite, a file with no link
// to lose, it pings over the store's pool.
type dbProbe struct {
	pool *bun.DB // the store's
	own  *bun.DB // the probe's, on PostgreSQL and MySQL
}

// newDBProbe returns the probe of store's database, opening its own pool
// within -start-timeout, as the other steps of a start are bounded; nil for
// a store with no database (-db memory).
func newDBProbe(ctx context.Context, store backend, cfg config) (*dbProbe, error) {
	s, ok := store.(interface{ DB() *bun.DB })
	if !ok {
		return nil, nil // -db memory: no database
	}
	p := &dbProbe{pool: s.DB()}
	if t, _ := bunopen.Parse(cfg.db); t.Kind != bunopen.KindPostgres && t.Kind != bunopen.KindMySQL {
		return p, nil
	}
	err := startStep(ctx, cfg.start, 0, func(ctx context.Context) (err error) {
		p.own, err = bunopen.Open(ctx, cfg.db)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("/readyz's database connection: %w", err)
	}
	p.own.SetMaxOpenConns(1)
	p.own.SetMaxIdleConns(1)
	p.own.SetConnMaxLifetime(0) // kept until it breaks
	p.own.SetConnMaxIdleTime(0)
	return p, nil
}

// ping pings the database within timeout and says what it found: "ok",
// "unreachable", or, when it answers while every connection of the
// store's pool is in use, "busy": a burst being served, not an outage.
// On SQLite a ping that found no free connection in the pool within
// timeout is "busy" too.
func (p *dbProbe) ping(ctx context.Context, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	db := cmp.Or(p.own, p.pool)
	err := db.PingContext(ctx)
	st := p.pool.Stats()
	full := st.MaxOpenConnections > 0 && st.InUse >= st.MaxOpenConnections
	switch {
	case full && (err == nil || db == p.pool && ctx.Err() != nil):
		return fmt.Sprintf("busy: all %d connections in use", st.MaxOpenConnections)
	case err != nil:
		return "unreachable"
	}
	return "ok"
}

// close closes the probe's own pool, if it has one.
func (p *dbProbe) close() {
	if p.own != nil {
		p.own.Close()
	}
}

// demoKey creates a demo key on the Pro plan when no -keys are given and
// the store has none, records its project as deployed (it is the
// operator's own configuration), and returns its secret ("" when none
// was created), so a restart keeps the key printed on first start. run
// calls it only once the listeners are up: a start that cannot listen
// creates nothing, and the next one that can creates and prints the key,
// which would be lost otherwise (the store keeps only its hash).
func demoKey(ctx context.Context, cfg config, keys *petstore.Keys, deploys DeployStore) (string, error) {
	if len(cfg.keys) > 0 {
		return "", nil
	}
	var stored []petstore.APIKey
	if err := startStep(ctx, cfg.start, 0, func(ctx context.Context) (err error) {
		stored, err = keys.List(ctx)
		return err
	}); err != nil {
		return "", fmt.Errorf("list keys: %w", err)
	}
	if len(stored) > 0 {
		return "", nil
	}
	var demo petstore.APIKey
	var secret string
	if err := startStep(ctx, cfg.start, 0, func(ctx context.Context) (err error) {
		demo, secret, err = keys.Create(ctx, "", petstore.PlanPro, petstore.Limits{})
		return err
	}); err != nil {
		return "", fmt.Errorf("create demo key: %w", err)
	}
	if err := startStep(ctx, cfg.start, 0, func(ctx context.Context) error {
		return deployedOnce(ctx, deploys, demo.ProjectID)
	}); err != nil {
		return "", err
	}
	return secret, nil
}

// openFeed returns the change feed that tells this server's processes of
// key changes: Redis pub/sub with -redis, else PostgreSQL LISTEN/NOTIFY
// on PostgreSQL, else none (nil), and then cached keys live for
// keycache.DefaultTTL. The keys subcommand publishes on the same feed, so
// it needs the same -db and -redis as the servers.
func openFeed(cfg config) (changefeed.Feed, func(), error) {
	if cfg.redis != "" {
		opts, err := redislimit.ParseOptions(cfg.redis)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis: %w", err)
		}
		client := redis.NewClient(opts)
		return redisfeed.New(client, cfg.redisPrefix), func() { client.Close() }, nil
	}
	if t, err := bunopen.Parse(cfg.db); err == nil && t.Kind == bunopen.KindPostgres {
		f, err := pgfeed.New(t.DriverDSN, "")
		if err != nil {
			return nil, nil, fmt.Errorf("-db %s: %w", bunopen.Redact(cfg.db), err)
		}
		return f, func() { f.Close() }, nil
	}
	return nil, func() {}, nil
}

// followsDatabaseFeed reports whether followDatabaseFeed listens: on a
// PostgreSQL database, for a server whose feed is Redis.
func followsDatabaseFeed(cfg config) bool {
	t, err := bunopen.Parse(cfg.db)
	return cfg.redis != "" && err == nil && t.Kind == bunopen.KindPostgres
}

// followDatabaseFeed has a server whose feed is Redis, on a PostgreSQL
// database, also hear the key changes published on the database's own
// feed (LISTEN/NOTIFY): a keys command run with -db alone then reaches it
// at once too, instead of after its cache's live bound (issue 26). apply
// gets the key changes and the feed's KindLost and KindLive: a revoke
// may have been missed while it was lost.
func followDatabaseFeed(ctx context.Context, cfg config, logger *slog.Logger, apply func(changefeed.Change), a *app) error {
	if !followsDatabaseFeed(cfg) {
		return nil
	}
	t, _ := bunopen.Parse(cfg.db)
	f, err := pgfeed.New(t.DriverDSN, "")
	if err != nil {
		return fmt.Errorf("-db %s: %w", bunopen.Redact(cfg.db), err)
	}
	a.closers = append(a.closers, func() { f.Close() })
	go func() {
		_ = f.Subscribe(ctx, func(c changefeed.Change) {
			switch c.Kind {
			case changefeed.KindKey, changefeed.KindLive, changefeed.KindLost:
				apply(c)
			}
		})
	}()
	return nil
}

// keyChangeReach says whom a key change made by the keys subcommand
// reached, and for how long the servers it did not reach may still act
// on the old key: the bound an operator must know after a revoke.
func keyChangeReach(cfg config) string {
	switch t, err := bunopen.Parse(cfg.db); {
	case cfg.redis != "":
		return "running servers started with this -redis were told at once."
	case err == nil && t.Kind == bunopen.KindPostgres:
		return "running servers on this PostgreSQL database were told at once (LISTEN/NOTIFY)."
	default:
		return fmt.Sprintf("no change feed was reached: running servers without -redis apply it within %v, "+
			"but servers started with -redis may act on the old key for up to %v; run this command with their -redis to tell them at once.",
			keycache.DefaultTTL, keycache.DefaultLiveTTL)
	}
}

// runKeys runs the keys subcommand. A revoke or a plan change is
// published on the servers' change feed, so running servers apply it
// within a second; without a feed they do within keycache.DefaultTTL.
func runKeys(ctx context.Context, cfg config, store backend, stdout io.Writer) error {
	feed, closeFeed, err := openFeed(cfg)
	if err != nil {
		return err
	}
	defer closeFeed()
	var opts []petstore.KeysOption
	var publishErr error
	if feed != nil {
		opts = append(opts, petstore.WithKeyChangeHook(func(ctx context.Context, id string) {
			// Told even when the command's own time is up: a change whose
			// answer was lost may have been stored.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			publishErr = feed.Publish(ctx, changefeed.Change{Kind: changefeed.KindKey, ID: id})
		}))
	}
	if err := createDeployed(ctx, store, cfg.command[1:], func(args []string) error {
		return keyscli.Run(ctx, store, args, stdout, opts...)
	}); err != nil {
		return err
	}
	if publishErr != nil {
		return fmt.Errorf("the change is stored, but running servers were not told (%v): they apply it within %v", publishErr, keycache.DefaultLiveTTL)
	}
	if len(cfg.command) > 1 && slices.Contains([]string{"revoke", "unrevoke", "set-plan"}, cfg.command[1]) {
		fmt.Fprintln(stdout, keyChangeReach(cfg))
	}
	return nil
}

// followFeed hands feed's changes to each of apply (the key cache's and
// the domain engine's) until ctx is done, logging when the feed is lost
// and when it is back.
func followFeed(ctx context.Context, feed changefeed.Feed, logger *slog.Logger, apply ...func(changefeed.Change)) {
	lost := false
	_ = feed.Subscribe(ctx, func(c changefeed.Change) {
		for _, fn := range apply {
			fn(c)
		}
		switch {
		case c.Kind == changefeed.KindLost && ctx.Err() == nil:
			lost = true
			logger.Warn("change feed lost: keys are cached for at most " + keycache.DefaultTTL.String() +
				" and other processes' domain changes are seen within " + customdomain.DefaultRefreshEvery.String() + " until it is back")
		case c.Kind == changefeed.KindLive && lost:
			lost = false
			logger.Info("change feed back")
		}
	})
}

// probeStoreTimeout bounds how long the probes' rate limit waits for
// Redis (the API's waits 1 s, ratelimit's default): with Redis paused, a
// /readyz probe, which also pings the database (readyTimeout), must still
// be answered within Kubernetes' default probe timeout of 1 s, until the
// limiter's breaker stops calling Redis.
const probeStoreTimeout = 400 * time.Millisecond

// limiters are the server's rate limiters over one counter store.
type limiters struct {
	api *ratelimit.Limiter
	// probes limits /readyz and /metrics on the same counters, but fails
	// open whatever -ratelimit-fail says: the probes report a Redis
	// outage, so they must answer through one. With -redis it is a
	// limiter of its own, which waits for Redis at most probeStoreTimeout;
	// in memory it is api.
	probes *ratelimit.Limiter
	admin  ratelimit.Admin // the store, for operators
	close  func()
}

// status is the state of the counter store as the server's limiters
// found it, which /healthz, /readyz and petstore_limiter_store_up all
// report: each limiter learns of Redis from the requests it decides and
// from its ban poll, and the probes' one from the probe or scrape it
// has just decided, which is the newer finding; so Redis is failing when
// the API's limiter found it so, or the probes' found it refusing or
// dropping connections. A probes' call that only timed out says nothing:
// it waited probeStoreTimeout, under ratelimit's 1 s line between a busy
// store and a failing one, so it would report a slow Redis that still
// decides every API request; a paused one is reported by the API's
// limiter's ban poll within its 1 s. The mode is the API's; the counts
// are both limiters'.
func (l limiters) status() ratelimit.Status {
	st := l.api.Status()
	if l.probes == l.api {
		return st
	}
	p := l.probes.Status()
	if p.Degraded && p.Unreachable && !(st.Degraded && st.Unreachable) {
		// The probes' limiter found Redis refusing since the API's last
		// call: its findings are the newer.
		st.Degraded, st.Unreachable, st.Since = true, true, p.Since
	}
	st.Failures += p.Failures
	st.LocalDecisions += p.LocalDecisions
	return st
}

// stats are the figures of the server's limiters together: the subjects
// both hold in memory, the evictions of both, and the coarser of their
// IPv6 aggregations.
func (l limiters) stats() ratelimit.Stats {
	st := l.api.Stats()
	if l.probes == l.api {
		return st
	}
	p := l.probes.Stats()
	st.Subjects += p.Subjects
	st.Evictions += p.Evictions
	st.Aggregation = max(st.Aggregation, p.Aggregation)
	return st
}

// newLimiters builds the rate limiters: counters in memory, or in Redis
// when several processes must share them.
func newLimiters(cfg config, logger *slog.Logger) (limiters, error) {
	// The dashboard's Usage panel charts each key's last hour from this
	// process's decisions; addresses are not kept, so a flood of them
	// cannot push the keys out.
	history := ratelimit.NewHistory(ratelimit.HistoryConfig{KeepPrefix: httpx.KeySubject("")})
	rcfg := ratelimit.Config{FailClosed: !cfg.failOpen, Logger: logger, History: history}
	if cfg.redis == "" {
		mem := ratelimit.NewMemoryStore()
		lim := ratelimit.New(mem, rcfg)
		return limiters{api: lim, probes: lim, admin: mem, close: func() {}}, nil
	}
	opts, err := redislimit.ParseOptions(cfg.redis)
	if err != nil {
		return limiters{}, fmt.Errorf("-redis: %w", err)
	}
	client := redis.NewClient(opts)
	store := redislimit.New(client, limitPrefix(cfg))
	// The probes' limiter fails open, and waits for Redis no longer than
	// probeStoreTimeout, whatever the API's does.
	l := limiters{api: ratelimit.New(store, rcfg), admin: store,
		probes: ratelimit.New(store, ratelimit.Config{Logger: logger.With("limiter", "probes"), StoreTimeout: probeStoreTimeout})}
	all := []*ratelimit.Limiter{l.api, l.probes}
	l.close = func() {
		// Unused shares go back to Redis, so the other processes may
		// admit them at once.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, lim := range all {
			if err := lim.Close(ctx); err != nil {
				logger.Warn("rate-limit shares not returned to Redis; they return when their windows end", "err", err)
			}
		}
		client.Close()
	}
	return l, nil
}

// limitPrefix is where the rate-limit hashes live in Redis, under
// -redis-prefix; the bans and keys usage commands read the same.
func limitPrefix(cfg config) string { return cfg.redisPrefix + "rl:" }

// newIssuer builds the ACME certificate issuer for -acme-ca.
func newIssuer(cfg config, store backend, resolver customdomain.Resolver, dcv dnsconfig.Provider, logger *slog.Logger, engine func() *customdomain.Engine) (*acme.Issuer, error) {
	httpPort, err := portOf(cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("-addr: %w", err)
	}
	tlsPort := 0
	if cfg.tlsAddr != "" {
		if tlsPort, err = portOf(cfg.tlsAddr); err != nil {
			return nil, fmt.Errorf("-tls-addr: %w", err)
		}
	}
	acfg := acme.Config{
		CA:            cfg.acmeCA,
		RootCAs:       cfg.acmeRoots,
		Email:         cfg.acmeEmail,
		CAAIdentities: cfg.acmeCAA,
		Storage:       store,
		Resolver:      resolver,
		DNSResolvers:  cfg.dnsResolvers,
		HTTPPort:      httpPort,
		TLSPort:       tlsPort,
		Logger:        logger,
		OnChange: func(name string) {
			if e := engine(); e != nil {
				if err := e.CertificateChanged(context.Background(), name); err != nil {
					logger.Warn("certificate change not recorded", "name", name, "err", err)
				}
			}
		},
		// Asked on every TLS handshake, for any SNI anyone sends: the
		// engine answers from memory (issuing, active and misconfigured
		// names, refreshed with the routing table), never from the
		// database.
		Allowed: func(_ context.Context, name string) bool {
			e := engine()
			return e != nil && e.Admits(name)
		},
		// ACME challenges for a name no domain holds are refused without
		// reading the certificate storage (the database): also from
		// memory, so made-up names cost nothing.
		Held: func(_ context.Context, name string) bool {
			e := engine()
			return e != nil && e.Holds(name)
		},
		// A misconfigured domain is served through its grace period, but
		// its certificate is not renewed.
		Renewable: func(_ context.Context, name string) bool {
			e := engine()
			return e != nil && e.Renews(name)
		},
		// A name below a wildcard, with no domain of its own, is served
		// with the wildcard's certificate: never one of its own.
		Covered: func(_ context.Context, name string) bool {
			e := engine()
			return e != nil && e.CoveredByWildcard(name)
		},
	}
	if cfg.acmeDCVZone != "" {
		acfg.DCVZone, acfg.DCVProvider = cfg.acmeDCVZone, dcv
	}
	return acme.New(acfg)
}

// portOf returns the port of a listen address such as ":8080", or
// ":http", a service name, as net.Listen takes it.
func portOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return net.LookupPort("tcp", p)
}

// nonIPHosts drops IP literals and wildcards' stars: what remains are the
// platform's own names, which customers may never claim.
func nonIPHosts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if net.ParseIP(h) != nil {
			continue
		}
		if len(h) > 2 && h[:2] == "*." {
			h = h[2:]
		}
		out = append(out, h)
	}
	return out
}
