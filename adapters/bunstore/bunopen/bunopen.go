// Package bunopen opens the *bun.DB that bunstore.New needs from one DSN
// string, the form of a server's -db flag. Unlike bunstore, it imports every
// driver (PostgreSQL through pgx, MySQL/MariaDB through go-sql-driver), so
// only programs that want to choose a database at run time pay for them.
// Its PostgreSQL connections are pgx's, with one method more, through
// which bunstore runs its hot reads natively (see bunstore's package
// documentation).
//
// Accepted forms:
//
//	sqlite:PATH                      a SQLite file (bunstore.OpenSQLite)
//	memory                           a private in-memory SQLite database
//	postgres://user:pass@host:5432/db?sslmode=disable   (or postgresql://)
//	mysql://user:pass@host:3306/db   MySQL or MariaDB
//
// "memory" here is SQL, one SQLite database per Open. examples/server's
// "-db memory" is not: the server takes it for adapters/memstore (no SQL at
// all) and never hands it to Open.
package bunopen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/internal/redact"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Kinds of database a DSN names.
const (
	KindSQLite   = "sqlite"
	KindMemory   = "memory"
	KindPostgres = "postgres"
	KindMySQL    = "mysql"
)

// Target is a parsed DSN: which database, and what to hand its driver.
type Target struct {
	// Kind is one of the Kind constants.
	Kind string
	// DriverDSN is the driver's own connection string: the SQLite path,
	// the pgx URL, or go-sql-driver's DSN. It may contain a password,
	// which a Target printed (fmt's verbs, slog) shows masked.
	DriverDSN string
}

// String describes t with its DriverDSN redacted (Redact), so that a
// target printed in a log line or an error does not show the password,
// as fmt would print every field otherwise.
func (t Target) String() string {
	return fmt.Sprintf("{Kind:%s DriverDSN:%s}", t.Kind, Redact(t.DriverDSN))
}

// GoString is String, for %#v.
func (t Target) GoString() string { return "bunopen.Target" + t.String() }

// LogValue is String, for slog handlers (JSON among them) that would
// otherwise log the fields.
func (t Target) LogValue() slog.Value { return slog.StringValue(t.String()) }

// Parse checks a DSN and maps it to its driver's form without connecting.
// PostgreSQL gets the simple query protocol unless the DSN chooses another
// mode (bun interpolates arguments itself; pgx's default would prepare a
// server-side statement for every distinct query). MySQL gets parseTime and
// clientFoundRows, so that bun scans times and counts the rows an update
// matched as on the other databases; bunstore's own queries do not count
// on clientFoundRows (see Store.SetKeyPlan), as a handle opened otherwise
// may lack it.
func Parse(dsn string) (Target, error) {
	switch {
	case dsn == "memory":
		return Target{Kind: KindMemory}, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" || strings.ContainsAny(path, "?#\x00") {
			return Target{}, errors.New("bunopen: sqlite DSN needs a file path without '?' or '#': sqlite:PATH")
		}
		return Target{Kind: KindSQLite, DriverDSN: path}, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return parsePostgres(dsn)
	case strings.HasPrefix(dsn, "mysql://"):
		return parseMySQL(dsn)
	}
	return Target{}, fmt.Errorf("bunopen: unsupported DSN %q: use sqlite:PATH, memory, postgres://… or mysql://…", Redact(dsn))
}

func parsePostgres(dsn string) (Target, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return Target{}, fmt.Errorf("bunopen: malformed postgres DSN %q", Redact(dsn))
	}
	q := u.Query()
	if q.Get("default_query_exec_mode") == "" {
		q.Set("default_query_exec_mode", "simple_protocol")
	}
	u.RawQuery = q.Encode()
	return Target{Kind: KindPostgres, DriverDSN: u.String()}, nil
}

func parseMySQL(dsn string) (Target, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return Target{}, fmt.Errorf("bunopen: malformed mysql DSN %q: use mysql://user[:pass]@host:port/db", Redact(dsn))
	}
	// Driver parameters (tls, timeout, charset...) pass through in the
	// query; go-sql-driver parses and validates them.
	cfg, err := mysql.ParseDSN("/?" + u.RawQuery)
	if err != nil {
		return Target{}, fmt.Errorf("bunopen: mysql DSN parameters: %v", err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "3306"
	}
	db := strings.TrimPrefix(u.Path, "/")
	if host == "" || db == "" || strings.Contains(db, "/") {
		return Target{}, fmt.Errorf("bunopen: mysql DSN %q needs a host and a database: mysql://user[:pass]@host:port/db", Redact(dsn))
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = db
	cfg.ParseTime = true
	cfg.ClientFoundRows = true
	return Target{Kind: KindMySQL, DriverDSN: cfg.FormatDSN()}, nil
}

// Redact returns dsn with any password replaced, for logs and errors:
// the user info's password and secret query parameters (password=...),
// and the whole DSN after its scheme when it does not parse.
func Redact(dsn string) string { return redact.URL(dsn) }

// DefaultMaxConns is how many connections Open lets a PostgreSQL or MySQL
// pool hold, open and idle alike: beyond it, callers wait in the pool,
// within their context. Keeping as many idle as open spares concurrent
// callers a new connection each (database/sql keeps 2 idle by default).
// A caller wanting another cap sets both on the returned DB.
const DefaultMaxConns = 10

// Open parses dsn, opens the database and checks that it answers within
// ctx: once ctx is done, Open returns ctx's error, whether or not the
// database answers at all. It does not run migrations: call
// bunstore.Migrate for that. A PostgreSQL or MySQL pool holds up to
// DefaultMaxConns connections.
func Open(ctx context.Context, dsn string) (*bun.DB, error) {
	t, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	var db *bun.DB
	switch t.Kind {
	case KindMemory:
		return bunstore.OpenMemory()
	case KindSQLite:
		return bunstore.OpenSQLite(t.DriverDSN)
	case KindPostgres:
		sqldb, err := openPostgres(t.DriverDSN, nil)
		if err != nil {
			return nil, fmt.Errorf("bunopen: %v", err)
		}
		db = bun.NewDB(sqldb, pgdialect.New())
	case KindMySQL:
		return openMySQL(ctx, t, dsn)
	}
	db.SetMaxOpenConns(DefaultMaxConns)
	db.SetMaxIdleConns(DefaultMaxConns)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, unreachable(t, dsn, err)
	}
	return db, nil
}

func unreachable(t Target, dsn string, err error) error {
	return fmt.Errorf("bunopen: cannot reach %s database %s: %w", t.Kind, Redact(dsn), err)
}

// openMySQL is Open for MySQL and MariaDB. bun.NewDB asks the server its
// version with no context (mysqldialect's Init), so a server that stops
// answering would hold Open forever: the database is pinged within ctx
// first, and every connection the pool dials until Open returns is closed
// as soon as ctx is done, which ends the dialect's query too.
func openMySQL(ctx context.Context, t Target, dsn string) (*bun.DB, error) {
	cfg, err := mysql.ParseDSN(t.DriverDSN)
	if err != nil {
		return nil, fmt.Errorf("bunopen: %v", err)
	}
	g := &startGuard{ctx: ctx}
	cfg.DialFunc = g.dial
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("bunopen: %v", err)
	}
	sqldb := sql.OpenDB(mysqlConnector{connector})
	// Close idle connections before a server's wait_timeout does.
	sqldb.SetConnMaxLifetime(3 * time.Minute)
	sqldb.SetMaxOpenConns(DefaultMaxConns)
	sqldb.SetMaxIdleConns(DefaultMaxConns)
	defer g.end()
	if err := sqldb.PingContext(ctx); err != nil {
		_ = sqldb.Close()
		return nil, unreachable(t, dsn, err)
	}
	// The driver ends its own calls within ctx, Ping's included; only the
	// dialect's need closing under it.
	stop := context.AfterFunc(ctx, g.closeAll)
	db := bun.NewDB(sqldb, mysqldialect.New())
	if !stop() {
		// ctx ended while the dialect asked for the version, which then
		// failed: the DB would lack the features the version enables.
		_ = db.Close()
		return nil, unreachable(t, dsn, context.Cause(ctx))
	}
	return db, nil
}

// startGuard keeps the connections a MySQL pool dials while Open runs,
// to close them when Open's ctx is done (see openMySQL).
type startGuard struct {
	mu    sync.Mutex
	ctx   context.Context // Open's; nil once Open returned
	conns []net.Conn
}

// dial is the driver's own dial, which it uses when no DialFunc is set.
func (g *startGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if p, ok := ctx.Value(dialedKey{}).(*net.Conn); ok {
		*p = c
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx != nil {
		if err := g.ctx.Err(); err != nil {
			_ = c.Close()
			return nil, err
		}
		g.conns = append(g.conns, c)
	}
	return c, nil
}

// closeAll closes the connections dialled so far.
func (g *startGuard) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
}

// end forgets the connections: they belong to the pool from now on.
func (g *startGuard) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ctx, g.conns = nil, nil
}

// mysqlConnector is go-sql-driver's connector, whose Connect panics on
// some malformed server greetings (v1.10.1 slices a short handshake
// packet past its end): its Connect turns such a panic into an error, so
// that another program on a MySQL port, or a broken proxy, fails the
// connection rather than the process, and guards the connection it
// returns against the same panics on later packets (mysqlguard.go). The driver's goroutine that
// watched the connection's context stays behind, one per such attempt.
type mysqlConnector struct{ driver.Connector }

// dialedKey is the context key under which Connect learns, from
// startGuard.dial, the network connection to close after a panic.
type dialedKey struct{}

// Connect is the driver's Connect, recovering from its panics.
func (c mysqlConnector) Connect(ctx context.Context) (conn driver.Conn, err error) {
	var dialed net.Conn
	defer func() {
		if r := recover(); r != nil {
			if dialed != nil {
				_ = dialed.Close()
			}
			conn, err = nil, fmt.Errorf("malformed answer from the server, not MySQL's: %v", r)
		}
	}()
	conn, err = c.Connector.Connect(context.WithValue(ctx, dialedKey{}, &dialed))
	if err != nil {
		return nil, err
	}
	return guard(conn, dialed)
}
