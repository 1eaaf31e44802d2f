// Command cluster is one API process of a custom deployment: many such
// processes serve the Petstore /v1 API behind a load balancer, sharing
// pets and keys in PostgreSQL (or MySQL/MariaDB) and rate-limit counters in
// Redis, so that a key's limits hold across all of them together.
//
//	go run ./examples/cluster -migrate -db postgres://... -redis 127.0.0.1:6379 -keys "$KEY:free" -addr :8081
//	go run ./examples/cluster          -db postgres://... -redis 127.0.0.1:6379 -keys "$KEY:free" -addr :8082
//
// README.md ("Compose it") builds the same process in code;
// docs/rate-limits.md ("Many processes") says how far the processes' limits
// hold together, and docs/keys.md ("Staleness bound") how soon they all see
// a key change.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/pgfeed"
	"github.com/petstorekit/petstore/adapters/redisfeed"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/changefeed"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/redact"
	"github.com/petstorekit/petstore/keycache"
	"github.com/petstorekit/petstore/keyscli"
	"github.com/petstorekit/petstore/ratelimit"
)

type config struct {
	addr, db, redis, prefix string
	keys                    []keyscli.Spec
	migrate, failOpen       bool
	dbTimeout               time.Duration
}

func parseConfig(args []string, getenv func(string) string) (config, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	var c config
	var fail string
	fs.StringVar(&c.addr, "addr", env("PETSTORE_ADDR", ":8080"), "listen address (env PETSTORE_ADDR)")
	db := redact.StringFlag(fs, "db", env("PETSTORE_DB", ""), redact.URL, "shared database: postgres://… or mysql://… (env PETSTORE_DB)")
	rdb := redact.StringFlag(fs, "redis", env("PETSTORE_REDIS", ""), redact.URL, "shared Redis for rate limits: host:port or redis://… (env PETSTORE_REDIS)")
	fs.StringVar(&c.prefix, "redis-prefix", env("PETSTORE_REDIS_PREFIX", "petstore:"), "put before every key written to Redis, as examples/server's -redis-prefix: rate limits under PREFIX rl:, key changes on PREFIX's channel (env PETSTORE_REDIS_PREFIX)")
	keys := redact.StringFlag(fs, "keys", env("PETSTORE_API_KEYS", ""), redact.Keys, "API keys, KEY:PLAN or KEY:enterprise:PERMIN/PERDAY, comma-separated (env PETSTORE_API_KEYS)")
	migrateDefault, err := strconv.ParseBool(env("PETSTORE_MIGRATE", "false"))
	if err != nil {
		return c, fmt.Errorf("PETSTORE_MIGRATE: want true or false, got %q", getenv("PETSTORE_MIGRATE"))
	}
	fs.BoolVar(&c.migrate, "migrate", migrateDefault, "apply database migrations before serving; run it in one process only (env PETSTORE_MIGRATE)")
	fs.StringVar(&fail, "ratelimit-fail", env("PETSTORE_RATELIMIT_FAIL", "open"), "when Redis is slow or down: open decides limits in this process (over-admission bounded, see docs/rate-limits.md), closed does too while Redis is slow but answers 503 while it refuses connections (env PETSTORE_RATELIMIT_FAIL)")
	dbTimeout := fs.String("db-timeout", env("PETSTORE_DB_TIMEOUT", "5s"), "how long a request may wait on the database; then 503 with Retry-After, as examples/server's -db-timeout (env PETSTORE_DB_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.dbTimeout, err = time.ParseDuration(*dbTimeout); err != nil || c.dbTimeout <= 0 {
		return c, fmt.Errorf("-db-timeout: want a positive duration such as 5s, got %q", *dbTimeout)
	}
	c.db, c.redis = *db, *rdb
	switch {
	case c.db == "":
		return c, errors.New("-db is required: the processes of a cluster share one database")
	case c.redis == "":
		return c, errors.New("-redis is required: the processes of a cluster share their rate limits through it")
	case fail != "open" && fail != "closed":
		return c, errors.New("-ratelimit-fail must be open or closed")
	}
	c.failOpen = fail == "open"

	if c.keys, err = keyscli.ParseSpecs(*keys); err != nil {
		return c, err
	}
	// memory and sqlite: would keep a store of their own in each process
	// (a DSN that does not parse is reported by the open, redacted).
	if t, err := bunopen.Parse(c.db); err == nil && t.Kind != bunopen.KindPostgres && t.Kind != bunopen.KindMySQL {
		return c, errors.New("-db must be postgres://… or mysql://…: the processes of a cluster share one database server, and a " + t.Kind + " store would be each process's own")
	}
	return c, nil
}

// run serves until ctx is done. It writes "listening on http://ADDR" to
// stdout once it accepts connections, so scripts (and the test) can wait
// for it and learn a port chosen with -addr 127.0.0.1:0; the log goes to
// stderr, as examples/server's does.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// What is opened is closed on the way out, last first, by stopBy once
	// a shutdown began, else within -db-timeout (a failed start, maybe on
	// the database): closing PostgreSQL's pool over a paused link waits
	// 5 s on each statement it frees, which must not hold the exit.
	var closers []func()
	var stopBy time.Time
	defer func() {
		if stopBy.IsZero() {
			stopBy = time.Now().Add(cfg.dbTimeout)
		}
		closeBy(stopBy, closers)
	}()

	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := bunopen.Open(openCtx, cfg.db)
	if err != nil {
		return fmt.Errorf("database %s: %w", bunopen.Redact(cfg.db), err)
	}
	closers = append(closers, func() { db.Close() })
	if cfg.migrate {
		if err := bunstore.Migrate(openCtx, db); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	store := bunstore.New(db)

	ropts, err := redislimit.ParseOptions(cfg.redis)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(ropts)
	closers = append(closers, func() { rdb.Close() })

	// Authenticated keys are cached; a key changed by any process reaches
	// the others over Redis pub/sub, on the channel examples/server's keys
	// subcommand publishes on.
	feed := redisfeed.New(rdb, cfg.prefix)
	keys, auth := keycache.NewKeys(store, feed, keycache.Config{}, func(err error) {
		logger.Warn("key change not published", "err", err)
	})
	// On PostgreSQL the key changes published on the database's own feed
	// (LISTEN/NOTIFY) are heard too, as examples/server's are: its keys
	// subcommand run with -db alone publishes there, and says that the
	// servers were told. The cache then trusts what it holds only while
	// both feeds are live: a revoke missed on either is as bad.
	feeds := []changefeed.Feed{feed}
	if t, err := bunopen.Parse(cfg.db); err == nil && t.Kind == bunopen.KindPostgres {
		pg, err := pgfeed.New(t.DriverDSN, "")
		if err != nil {
			return fmt.Errorf("database %s: %w", bunopen.Redact(cfg.db), err)
		}
		closers = append(closers, func() { pg.Close() })
		feeds = append(feeds, pg)
	}
	fromFeed := changefeed.AllLive(len(feeds), auth.Apply)
	for i, f := range feeds {
		go func() {
			_ = f.Subscribe(ctx, func(c changefeed.Change) {
				switch c.Kind {
				case changefeed.KindKey, changefeed.KindLive, changefeed.KindLost:
					fromFeed[i](c)
				}
			})
			// Nothing is heard on it any more, as in keycache.Cache.Follow.
			fromFeed[i](changefeed.Change{Kind: changefeed.KindLost})
		}()
	}
	if err := keyscli.Ensure(openCtx, keys, cfg.keys, logger); err != nil {
		return err
	}
	limiter := ratelimit.New(redislimit.New(rdb, cfg.prefix+"rl:"), ratelimit.Config{FailClosed: !cfg.failOpen, Logger: logger})
	// On the way out, unused shares of the limits go back to Redis.
	closers = append(closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = limiter.Close(cctx)
	})

	hcfg := httpx.Config{
		Service: petstore.NewService(store),
		Auth:    auth,
		Logger:  logger,
		Limiter: limiter,
		// A database that stopped answering costs a request this long,
		// then 503 with Retry-After, never a hang that holds a pool
		// connection and the client.
		Timeout: cfg.dbTimeout,
	}
	// Idempotency-Key replay needs the records shared too: it is on when
	// the store keeps them.
	if is, ok := any(store).(petstore.IdempotencyStore); ok {
		hcfg.Idempotency = is
	}
	api, err := httpx.New(hcfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopBy = time.Now().Add(shutdownGrace)
	shutdown, cancelShutdown := context.WithDeadline(context.Background(), stopBy)
	defer cancelShutdown()
	return srv.Shutdown(shutdown)
}

// shutdownGrace bounds a stop: draining the requests in flight, then
// closing the database pool and the other connections.
const shutdownGrace = 15 * time.Second

// closeBy runs closers, last first, and waits for them until deadline at
// most: a database or Redis whose link is paused must not keep a stopping
// process alive.
func closeBy(deadline time.Time, closers []func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// usageError is a malformed command line, for which the process exits
// with status 2, as the flag package's programs do (docs/operating.md);
// any other failure exits with status 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	redis.SetLogger(redislimit.QuietLogger{}) // one report per interval, from the limiter
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // the usage asked for is printed: a success
		}
		fmt.Fprintln(os.Stderr, "cluster:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
