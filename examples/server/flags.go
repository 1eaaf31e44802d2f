package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/redact"
	"github.com/petstorekit/petstore/keyscli"
)

// defaultMigrateTimeout is -migrate-timeout's default: room for a
// migration that builds an index on a large table, or that waits for
// another replica's migrations (MySQL gives up that wait after 5 min,
// see bunstore.Migrate), yet a bound on a database that stopped
// answering after the server reached it.
const defaultMigrateTimeout = "10m"

// config is the server's configuration. Every flag can also be set by its
// environment variable; a flag on the command line wins.
type config struct {
	addr string
	keys []keyscli.Spec

	db             string        // storage DSN, see bunopen
	migrate        bool          // run schema migrations at start
	migrateTimeout time.Duration // bound of those migrations: apart from dbTimeout, as one may rightly take longer
	dbMaxConns     int           // cap of the PostgreSQL/MySQL connection pool
	dbTimeout      time.Duration // bound of a request's database calls
	start          bound         // bound of each step of a start: -start-timeout, or -db-timeout without it

	redis          string         // rate-limit counters; empty: in memory
	redisPrefix    string         // put before every key the server writes to Redis
	failOpen       bool           // admit when the counter store is down
	ietfHeaders    bool           // also send the IETF draft's RateLimit-Policy and RateLimit
	trustedProxies []netip.Prefix // peers whose X-Forwarded-For is believed

	platformHosts []string           // hosts that serve the platform itself
	cnameTarget   string             // what customers point their CNAME at
	edgeIPs       []netip.Addr       // the edge's addresses, for apex domains
	dnsResolvers  []string           // nameservers verification asks; empty: the system's
	dnsProvider   *dnsProviderSpec   // the DNS the platform manages; nil: none
	maxDomains    int                // custom domains per project; 0: the engine's default, negative: no cap
	cdns          []customdomain.CDN // read from -cdn-ranges, for the PROXIED diagnosis; nil: the embedded list
	recheck       time.Duration      // how often live domains' records are checked again
	driftGrace    time.Duration      // how long a misconfigured domain is still served
	eventTimeout  time.Duration      // how long the engine waits for each hand-off of a domain event

	acmeCA    string // ACME directory; empty: no certificates
	acmeRoot  string // PEM file of extra roots to trust for the CA
	acmeRoots []byte // what acmeRoot holds, read with the flags; nil: none
	acmeEmail string
	acmeCAA   []string // the CA's CAA identities; empty: the directory's
	// acmeDCVZone is the zone of -dns-provider where DNS-01 records of
	// delegated names go; empty: no DCV delegation (and no wildcard
	// certificates).
	acmeDCVZone string
	tlsAddr     string // HTTPS listener; empty: none

	metricsAddr string // GET /metrics listener; empty: on the platform hosts
	logFormat   string // text or json
	traceFile   string // OpenTelemetry spans as JSON; "-": stderr; empty: off
	adminAddr   string // operator endpoint; empty: none
	adminToken  string // PETSTORE_ADMIN_TOKEN: bearer token of the operator endpoint; empty: loopback only
	pprofAddr   string // net/http/pprof listener, loopback only; empty: none

	webhookAllowPrivate bool // webhook receivers may be on non-public addresses

	command []string // a subcommand ("keys ...") instead of serving
	version bool     // -version: print what the binary was built from
}

// parseConfig reads flags, defaulting each to its environment variable.
// The server's flags may also follow a subcommand. -h prints the usage to
// out and returns flag.ErrHelp, as does a subcommand's -h with its own.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	// The usage goes to out when asked for (-h); after a malformed
	// command line main prints it on stderr.
	fs.SetOutput(io.Discard)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	addr := fs.String("addr", env("PETSTORE_ADDR", ":8080"), "listen address (PETSTORE_ADDR)")
	keys := redact.StringFlag(fs, "keys", env("PETSTORE_API_KEYS", ""), redact.Keys, "comma-separated KEY:PLAN (free|pro|business) or KEY:enterprise:PERMIN/PERDAY; none: a Pro demo key (PETSTORE_API_KEYS)")
	db := redact.StringFlag(fs, "db", env("PETSTORE_DB", "sqlite:petstore.db"), redact.URL, "storage: sqlite:PATH (a file), memory (adapters/memstore: everything in this process, no SQL, lost at exit), postgres://... or mysql://user@host:port/db (PETSTORE_DB)")
	dbMaxConns := fs.String("db-max-conns", env("PETSTORE_DB_MAX_CONNS", strconv.Itoa(bunopen.DefaultMaxConns)), "most pooled connections to PostgreSQL or MySQL; requests beyond it queue in the server, within -db-timeout (PETSTORE_DB_MAX_CONNS)")
	dbTimeout := fs.String("db-timeout", env("PETSTORE_DB_TIMEOUT", "5s"), "how long a request may wait on the database (a queue for a connection included); past it the answer is 503 with Retry-After (PETSTORE_DB_TIMEOUT)")
	startTimeout := fs.String("start-timeout", env("PETSTORE_START_TIMEOUT", ""), "how long the server or a command waits for the database's first answer, and the server for each later step of its start (loading custom domains, storing the -keys keys, the demo key); past it, it exits with an error; empty: -db-timeout (PETSTORE_START_TIMEOUT)")
	migrate := fs.String("migrate", env("PETSTORE_MIGRATE", "true"), "run schema migrations at start; false when a separate step runs them (PETSTORE_MIGRATE)")
	migrateTimeout := fs.String("migrate-timeout", env("PETSTORE_MIGRATE_TIMEOUT", defaultMigrateTimeout), "how long the schema migrations at start (-migrate) may take, waiting for another process's included; past it the server or command exits with an error (PETSTORE_MIGRATE_TIMEOUT)")
	redis := redact.StringFlag(fs, "redis", env("PETSTORE_REDIS", ""), redact.URL, "Redis for rate-limit counters and key changes shared by processes: host:port or redis:// URL; empty: in memory (PETSTORE_REDIS)")
	redisPrefix := fs.String("redis-prefix", env("PETSTORE_REDIS_PREFIX", "petstore:"), "put before every key this server and its subcommands write to Redis, so deployments (or a test and a developer) can share one Redis; processes that share limits need the same one (PETSTORE_REDIS_PREFIX)")
	rlFail := fs.String("ratelimit-fail", env("PETSTORE_RATELIMIT_FAIL", "open"), "when the shared counter store (-redis) is slow or down: open decides limits in this process (same limits; over-admission bounded by the number of processes), closed does too while it is slow but answers 503 while it is unreachable, and needs -redis (PETSTORE_RATELIMIT_FAIL)")
	rlHeaders := fs.String("ratelimit-headers", env("PETSTORE_RATELIMIT_HEADERS", "x"), "rate-limit headers on every answer: x (X-RateLimit-Limit, -Remaining and -Reset of the binding window, as the spec says) or both (those and the IETF draft's RateLimit-Policy and RateLimit for every window) (PETSTORE_RATELIMIT_HEADERS)")
	proxies := fs.String("trusted-proxies", env("PETSTORE_TRUSTED_PROXIES", ""), "comma-separated addresses or CIDRs whose X-Forwarded-For is trusted (PETSTORE_TRUSTED_PROXIES)")
	platform := fs.String("platform-hosts", env("PETSTORE_PLATFORM_HOSTS", "localhost"), "comma-separated hosts serving the platform itself; IP literals always do (PETSTORE_PLATFORM_HOSTS)")
	cname := fs.String("cname-target", env("PETSTORE_CNAME_TARGET", customdomain.DefaultCNAMETarget), "the name customers point their CNAME or ALIAS at (PETSTORE_CNAME_TARGET)")
	edgeIPs := fs.String("edge-ips", env("PETSTORE_EDGE_IPS", "127.0.0.1"), "comma-separated addresses of the edge, for apex domains (PETSTORE_EDGE_IPS)")
	resolvers := fs.String("dns-resolvers", env("PETSTORE_DNS_RESOLVERS", ""), "comma-separated nameservers (host[:port]) that verification asks; empty: the system's (PETSTORE_DNS_RESOLVERS)")
	dnsProvider := redact.StringFlag(fs, "dns-provider", env("PETSTORE_DNS_PROVIDER", ""), redact.URL, "the DNS the platform manages for customers, whose records the dashboard can write (\"Configure DNS for me\") for domains in its zones: "+dnsProviderUsage+"; empty: none (PETSTORE_DNS_PROVIDER; prefer the variable, a flag's secret shows in ps)")
	maxDomains := fs.String("max-domains-per-project", env("PETSTORE_MAX_DOMAINS_PER_PROJECT", strconv.Itoa(customdomain.DefaultMaxDomainsPerProject)), "most custom domains one project may hold; -1: no cap (PETSTORE_MAX_DOMAINS_PER_PROJECT)")
	cdnRanges := fs.String("cdn-ranges", env("PETSTORE_CDN_RANGES", ""), "file of CDN address ranges (\"NAME CIDR\" a line, as customdomain/cdn-ranges.txt) that the diagnosis names as a proxy (PROXIED); empty: the list built in (PETSTORE_CDN_RANGES)")
	recheck := fs.String("recheck-active", env("PETSTORE_RECHECK_ACTIVE", customdomain.DefaultRecheckActive.String()), "how often the DNS record of a live custom domain is checked again, so one pointed elsewhere is noticed (PETSTORE_RECHECK_ACTIVE)")
	driftGrace := fs.String("drift-grace", env("PETSTORE_DRIFT_GRACE", customdomain.DefaultDriftGrace.String()), "how long a custom domain whose record no longer points here is still served, without certificate renewal, before it is released (PETSTORE_DRIFT_GRACE)")
	eventTimeout := fs.String("domain-event-timeout", env("PETSTORE_DOMAIN_EVENT_TIMEOUT", customdomain.DefaultHandOffTimeout.String()), "how long the custom-domain engine waits for the webhook outbox to take each lifecycle event; past it the event waits in the domain's entry for a later try, and so do those of the other domains the same background round or request changes; below "+customdomain.OutboxLease.String()+" (PETSTORE_DOMAIN_EVENT_TIMEOUT)")
	acmeCA := fs.String("acme-ca", env("PETSTORE_ACME_CA", ""), "ACME directory URL; empty: no certificates (PETSTORE_ACME_CA)")
	acmeRoot := fs.String("acme-root", env("PETSTORE_ACME_ROOT", ""), "PEM file of extra roots to trust when talking to the CA (PETSTORE_ACME_ROOT)")
	acmeEmail := fs.String("acme-email", env("PETSTORE_ACME_EMAIL", ""), "ACME account contact address (PETSTORE_ACME_EMAIL)")
	acmeCAA := fs.String("acme-caa-identities", env("PETSTORE_ACME_CAA_IDENTITIES", ""), "comma-separated domain names that CAA issue records name the CA by (such as letsencrypt.org), overriding the ACME directory's caaIdentities; needed to check CAA for a CA whose directory names none (PETSTORE_ACME_CAA_IDENTITIES)")
	acmeDCV := fs.String("acme-dcv-zone", env("PETSTORE_ACME_DCV_ZONE", ""), "a zone of -dns-provider where certificate validation is delegated: customers' _acme-challenge CNAMEs point into it, so certificates are obtained by DNS-01 before traffic moves, and wildcards get theirs; empty: none (PETSTORE_ACME_DCV_ZONE)")
	tlsAddr := fs.String("tls-addr", env("PETSTORE_TLS_ADDR", ""), "HTTPS listen address; empty: no HTTPS listener (PETSTORE_TLS_ADDR)")
	version := fs.Bool("version", false, "print the module version, VCS revision and Go version the binary was built with, and exit (as the version subcommand does)")
	fs.Usage = func() {}
	setObserve := observeFlags(fs, env)
	setWebhooks := webhookFlags(fs, env)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		printUsage(out, fs)
		return config{}, err
	} else if err != nil {
		var usage strings.Builder
		printUsage(&usage, fs)
		return config{}, usageError{err: err, usage: strings.TrimSuffix(usage.String(), "\n")}
	}
	if *version {
		return config{version: true}, nil
	}
	var command []string
	if fs.NArg() > 0 {
		sc, ok := findSubcommand(fs.Arg(0))
		if !ok {
			return config{}, fmt.Errorf("unexpected arguments after the flags: the first is no subcommand (the subcommands are %s; -h lists them)", subcommandNames())
		}
		rest, help, err := splitServerFlags(fs, fs.Args()[1:])
		if help {
			fmt.Fprintln(out, sc.usage)
			return config{}, flag.ErrHelp
		}
		if err != nil {
			return config{}, err
		}
		command = append([]string{sc.name}, rest...)
	}
	maxConns, err := strconv.Atoi(*dbMaxConns)
	if err != nil || maxConns < 1 {
		return config{}, fmt.Errorf("-db-max-conns: want a whole number of at least 1, got %q", *dbMaxConns)
	}
	timeout, err := time.ParseDuration(*dbTimeout)
	if err != nil || timeout <= 0 {
		return config{}, fmt.Errorf("-db-timeout: want a positive duration such as 5s, got %q", *dbTimeout)
	}
	start := bound{flag: "-db-timeout", d: timeout}
	if *startTimeout != "" {
		start.flag = "-start-timeout"
		if start.d, err = time.ParseDuration(*startTimeout); err != nil || start.d <= 0 {
			return config{}, fmt.Errorf("-start-timeout: want a positive duration such as 30s, got %q", *startTimeout)
		}
	}
	if t, err := bunopen.Parse(*db); err != nil {
		return config{}, fmt.Errorf("-db: %w", err)
	} else if t.Kind == bunopen.KindPostgres {
		// The driver reads the rest (the port, sslmode, its files) only
		// when the database is opened: a wrong value is refused here.
		// pgx hides the password in its error.
		if _, err := pgx.ParseConfig(t.DriverDSN); err != nil {
			return config{}, fmt.Errorf("-db: %w", err)
		}
	}
	if *redis != "" {
		if _, err := redislimit.ParseOptions(*redis); err != nil {
			return config{}, fmt.Errorf("-redis: %w", err)
		}
	}
	for _, f := range []struct{ name, addr string }{{"-addr", *addr}, {"-tls-addr", *tlsAddr}} {
		if err := checkListenAddr(f.addr); (f.addr != "" || f.name == "-addr") && err != nil {
			return config{}, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	cfg := config{addr: *addr, db: *db, redis: *redis, redisPrefix: *redisPrefix, cnameTarget: *cname, dbMaxConns: maxConns, dbTimeout: timeout, start: start,
		acmeCA: *acmeCA, acmeRoot: *acmeRoot, acmeEmail: *acmeEmail, tlsAddr: *tlsAddr}
	if err := setObserve(&cfg); err != nil {
		return config{}, err
	}
	if err := setWebhooks(&cfg); err != nil {
		return config{}, err
	}
	cfg.command = command
	if cfg.keys, err = keyscli.ParseSpecs(*keys); err != nil {
		return config{}, fmt.Errorf("-keys: %w", err)
	}
	if cfg.migrate, err = strconv.ParseBool(*migrate); err != nil {
		return config{}, fmt.Errorf("-migrate: want true or false, got %q", *migrate)
	}
	if cfg.migrateTimeout, err = time.ParseDuration(*migrateTimeout); err != nil || cfg.migrateTimeout <= 0 {
		return config{}, fmt.Errorf("-migrate-timeout: want a positive duration such as 10m, got %q", *migrateTimeout)
	}
	switch *rlFail {
	case "open":
		cfg.failOpen = true
	case "closed":
		// In-memory limits never fail: closed would promise 503s that
		// never come.
		if cfg.redis == "" {
			return config{}, errors.New("-ratelimit-fail closed needs -redis: it says what to do while the shared counter store is down, and without -redis the limits are in memory, which never is")
		}
	default:
		return config{}, fmt.Errorf("-ratelimit-fail: want open or closed, got %q", *rlFail)
	}
	switch *rlHeaders {
	case "x":
	case "both":
		cfg.ietfHeaders = true
	default:
		return config{}, fmt.Errorf("-ratelimit-headers: want x or both, got %q", *rlHeaders)
	}
	if cfg.trustedProxies, err = parsePrefixes(*proxies); err != nil {
		return config{}, fmt.Errorf("-trusted-proxies: %w", err)
	}
	// Empty means the default, as for the variable: the engine would use
	// it anyway, and the banner must name what customers point at.
	if cfg.cnameTarget = strings.TrimSpace(cfg.cnameTarget); cfg.cnameTarget == "" {
		cfg.cnameTarget = customdomain.DefaultCNAMETarget
	}
	cfg.platformHosts = splitList(*platform)
	for s := range strings.SplitSeq(*edgeIPs, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return config{}, fmt.Errorf("-edge-ips: %q is not an IP address", s)
		}
		cfg.edgeIPs = append(cfg.edgeIPs, ip)
	}
	if cfg.dnsResolvers, err = parseResolvers(*resolvers); err != nil {
		return config{}, fmt.Errorf("-dns-resolvers: %w", err)
	}
	if cfg.dnsProvider, err = parseDNSProvider(*dnsProvider); err != nil {
		return config{}, fmt.Errorf("-dns-provider: %w", err) // never the value: it holds the TSIG secret
	}
	if cfg.maxDomains, err = strconv.Atoi(*maxDomains); err != nil || cfg.maxDomains == 0 || cfg.maxDomains < -1 {
		return config{}, fmt.Errorf("-max-domains-per-project: want a positive integer, or -1 for no cap; got %q", *maxDomains)
	}
	if cfg.cdns, err = readCDNs(*cdnRanges); err != nil {
		return config{}, fmt.Errorf("-cdn-ranges: %w", err)
	}
	if cfg.recheck, err = time.ParseDuration(*recheck); err != nil || cfg.recheck <= 0 {
		return config{}, fmt.Errorf("-recheck-active: want a positive duration such as 1h, got %q", *recheck)
	}
	if cfg.driftGrace, err = time.ParseDuration(*driftGrace); err != nil || cfg.driftGrace <= 0 {
		return config{}, fmt.Errorf("-drift-grace: want a positive duration such as 72h, got %q", *driftGrace)
	}
	if cfg.eventTimeout, err = time.ParseDuration(*eventTimeout); err != nil || cfg.eventTimeout <= 0 || cfg.eventTimeout >= customdomain.OutboxLease {
		return config{}, fmt.Errorf("-domain-event-timeout: want a positive duration below %s (the outbox lease) such as 5s, got %q", customdomain.OutboxLease, *eventTimeout)
	}
	if cfg.acmeCA != "" {
		if err := checkDirectoryURL(cfg.acmeCA); err != nil {
			return config{}, fmt.Errorf("-acme-ca: %w", err)
		}
	}
	cfg.acmeCAA = splitList(*acmeCAA)
	if cfg.acmeDCVZone = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(*acmeDCV)), "."); cfg.acmeDCVZone != "" {
		if cfg.acmeCA == "" {
			return config{}, errors.New("-acme-dcv-zone needs -acme-ca: it delegates certificate validation")
		}
		if cfg.dnsProvider == nil || !cfg.dnsProvider.servesZone(cfg.acmeDCVZone) {
			return config{}, fmt.Errorf("-acme-dcv-zone: %s must be one of the zones of -dns-provider, whose records the platform writes", cfg.acmeDCVZone)
		}
	}
	if cfg.acmeCA == "" && (cfg.tlsAddr != "" || cfg.acmeRoot != "" || len(cfg.acmeCAA) > 0) {
		return config{}, errors.New("-tls-addr, -acme-root and -acme-caa-identities need -acme-ca: certificates come from an ACME CA")
	}
	if cfg.acmeRoots, err = readRoots(cfg.acmeRoot); err != nil {
		return config{}, fmt.Errorf("-acme-root: %w", err)
	}
	return cfg, nil
}

// readCDNs reads the file of CDN address ranges at path; "" is none.
func readCDNs(path string) ([]customdomain.CDN, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cdns, err := customdomain.ParseCDNs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cdns, nil
}

// readRoots reads the PEM file of roots at path, which must hold a
// certificate; "" is none.
func readRoots(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pem, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// checkDirectoryURL checks that s can be an ACME directory's URL: an
// absolute http or https URL with a host and no user info, which ACME
// never uses and -h would show.
func checkDirectoryURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("%q is not an http(s) URL: give the ACME directory's, such as https://acme-v02.api.letsencrypt.org/directory", redact.URL(s))
	case u.User != nil:
		return errors.New("the URL must not hold a user name or password")
	}
	return nil
}

// parseResolvers reads comma-separated nameservers, each host[:port]
// with an IP address or a host name, as dnsresolver.New takes them: a
// mistyped one would otherwise fail every verification, not the start.
func parseResolvers(s string) ([]string, error) {
	out := splitList(s)
	for _, item := range out {
		host, port, err := net.SplitHostPort(item)
		if err != nil {
			host, port = strings.TrimSuffix(strings.TrimPrefix(item, "["), "]"), "53"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q: want host[:port] with a port from 1 to 65535", item)
		}
		if _, err := netip.ParseAddr(host); err != nil && !isHostName(host) {
			return nil, fmt.Errorf("%q: want host[:port], the host an IP address or a name such as ns1.example.com", item)
		}
	}
	return out, nil
}

// isHostName reports whether s is a host name: dot-separated labels of
// letters, digits and inner hyphens, a trailing dot allowed.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// parsePrefixes reads comma-separated CIDRs or single addresses.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range splitList(s) {
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", item)
		}
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}
