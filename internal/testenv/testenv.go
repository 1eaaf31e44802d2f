// Package testenv is where the repository's tests find the real services
// and programs they run against: PostgreSQL, MariaDB and Redis from
// environment variables, knotd and Chromium from PATH. A test whose service
// is missing is skipped with a message that says how to provide it, unless
// PETSTORE_TEST_REQUIRE_SERVICES=1 (as in CI), where a missing service is a
// failure: a green run then means every test really ran.
//
// It also hands each test a fresh PostgreSQL schema, MariaDB database or
// Redis key prefix, removed when the test ends, so that tests run in
// parallel and twice in a row against one shared server.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/redislimit"
	"github.com/petstorekit/petstore/internal/faultproxy"
)

// The environment variables the tests read, with the values that work on a
// developer machine running the services on their default ports.
const (
	RequireServicesEnv = "PETSTORE_TEST_REQUIRE_SERVICES"
	PostgresEnv        = "PETSTORE_TEST_POSTGRES"
	MySQLEnv           = "PETSTORE_TEST_MYSQL"
	RedisEnv           = "PETSTORE_TEST_REDIS"

	PostgresExample = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	MySQLExample    = "mysql://root@127.0.0.1:3306/test"
	RedisExample    = "redis://127.0.0.1:6379/0"
)

// Required reports whether PETSTORE_TEST_REQUIRE_SERVICES=1, that is,
// whether a missing service must fail the test instead of skipping it.
func Required() bool { return os.Getenv(RequireServicesEnv) == "1" }

// Require stops tb because what is missing: it skips, saying hint (how to
// provide it), or fails when PETSTORE_TEST_REQUIRE_SERVICES=1.
func Require(tb testing.TB, what, hint string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s, and %s=1 makes that a failure; %s", what, RequireServicesEnv, hint)
		return
	}
	tb.Skipf("%s; %s", what, hint)
}

// Service returns the value of the environment variable env, or stops tb
// through Require when it is unset, suggesting example as its value.
func Service(tb testing.TB, env, example string) string {
	tb.Helper()
	v := os.Getenv(env)
	if v == "" {
		Require(tb, env+" is unset", "set it (e.g. "+env+"="+example+") to run this test")
	}
	return v
}

// PostgresDSN returns the PostgreSQL server's DSN from PETSTORE_TEST_POSTGRES.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	return Service(tb, PostgresEnv, PostgresExample)
}

// MySQLDSN returns the MySQL/MariaDB server's DSN from PETSTORE_TEST_MYSQL.
func MySQLDSN(tb testing.TB) string {
	tb.Helper()
	return Service(tb, MySQLEnv, MySQLExample)
}

// RedisURL returns the Redis server's address from PETSTORE_TEST_REDIS.
func RedisURL(tb testing.TB) string {
	tb.Helper()
	return Service(tb, RedisEnv, RedisExample)
}

// LookPath returns the path of the first of names found in PATH or in the
// sbin directories (daemons such as knotd live there, and a non-root PATH
// often lacks them), or "" when none is installed.
func LookPath(names ...string) string {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, name := range names {
		for _, dir := range []string{"/usr/sbin/", "/usr/local/sbin/"} {
			if _, err := os.Stat(dir + name); err == nil {
				return dir + name
			}
		}
	}
	return ""
}

// Program returns the path of the program name, or stops tb through
// Require, naming debianPkg as the package that installs it.
func Program(tb testing.TB, name, debianPkg string) string {
	tb.Helper()
	p := LookPath(name)
	if p == "" {
		Require(tb, name+" is not installed", "install Debian's "+debianPkg+" package (apt-get install -y "+debianPkg+") to run this test")
	}
	return p
}

// randomName returns prefix followed by 12 random hex digits: a name no
// other test of this or another run uses.
func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

var (
	adminMu  sync.Mutex
	adminDBs = map[string]*bun.DB{} // by DSN; shared by the tests of one run
)

// admin returns a connection to the server at dsn for creating and
// dropping the tests' schemas and databases. One per server serves the
// whole run, so parallel tests do not each hold connections open.
func admin(tb testing.TB, dsn string) *bun.DB {
	tb.Helper()
	adminMu.Lock()
	defer adminMu.Unlock()
	if db := adminDBs[dsn]; db != nil {
		return db
	}
	db, err := bunopen.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	adminDBs[dsn] = db
	return db
}

// PostgresSchema creates a fresh schema on the PETSTORE_TEST_POSTGRES
// server and returns a DSN whose search_path selects it; the schema and
// everything in it is dropped when tb ends. Close what you open on the
// DSN in a Cleanup registered after this call, so that it runs first.
func PostgresSchema(tb testing.TB) string {
	tb.Helper()
	base := PostgresDSN(tb)
	db := admin(tb, base)
	schema := randomName("petstore_t_")
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _, _ = db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MySQLDatabase creates a fresh database (utf8mb4, binary collation) on
// the PETSTORE_TEST_MYSQL server and returns its DSN; the database is
// dropped when tb ends. Close what you open on the DSN in a Cleanup
// registered after this call, so that it runs first.
func MySQLDatabase(tb testing.TB) string {
	tb.Helper()
	base := MySQLDSN(tb)
	db := admin(tb, base)
	name := randomName("petstore_t_")
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _, _ = db.ExecContext(ctx, "DROP DATABASE "+name) })
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// RedisClient returns a new client of the PETSTORE_TEST_REDIS server,
// configured as production configures it (redislimit.ParseOptions) and
// closed when tb ends. Each call is its own connection pool, as a
// separate process would have.
func RedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	o, err := redislimit.ParseOptions(RedisURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// ProxiedRedis returns a client of the test's Redis (RedisClient) through
// a fault proxy, and the proxy, whose faults touch only this client.
func ProxiedRedis(tb testing.TB) (*faultproxy.Proxy, *redis.Client) {
	tb.Helper()
	o, err := redislimit.ParseOptions(RedisURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	proxy := faultproxy.Start(tb, o.Addr)
	o.Addr = proxy.Addr()
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return proxy, c
}

// RedisPrefix returns a fresh key prefix, "petstore-test:<what>:<random>:",
// and deletes every key under it through c when tb ends. c must stay open
// until then, as a client from RedisClient obtained before this call does.
func RedisPrefix(tb testing.TB, c *redis.Client, what string) string {
	tb.Helper()
	prefix := randomName("petstore-test:"+what+":") + ":"
	tb.Cleanup(func() {
		// One UNLINK per SCAN batch: a test that leaves tens of thousands
		// of keys (the flood's) is not cleaned one round trip a key.
		ctx := context.Background()
		for cursor := uint64(0); ; {
			keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				return
			}
			if len(keys) > 0 {
				c.Unlink(ctx, keys...)
			}
			if cursor = next; cursor == 0 {
				return
			}
		}
	})
	return prefix
}
