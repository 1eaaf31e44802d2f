// Package bunstore stores pets, store orders, API keys, Idempotency-Key
// records, custom domains, projects' deploys, webhook endpoints and their
// deliveries, and blobs (certificates, with cross-process locks) in SQL
// databases through bun: SQLite (the embedded default, pure Go through
// modernc.org/sqlite), PostgreSQL and MySQL/MariaDB. New works with any of
// the three dialects; the store implements petstore.Store,
// petstore.IdempotencyStore, petstore.OrderStore, blobs.Store,
// customdomain.Store and webhook.Store.
//
// A deployment opens a *bun.DB, runs Migrate once (a separate step, so that
// many replicas over one database do not race to change the schema), and
// builds the store with New:
//
//	db, err := bunstore.OpenSQLite("petstore.db")
//	...
//	if err := bunstore.Migrate(ctx, db); err != nil { ... }
//	store := bunstore.New(db)
//	svc := petstore.NewService(store)
//
// OpenSQLite and OpenMemory open SQLite correctly (WAL, immediate
// transactions, a private in-memory database); PostgreSQL and MySQL handles
// are opened by the caller, or by the bunopen subpackage from a DSN. This
// package imports no PostgreSQL or MySQL driver, only bun's dialects.
//
// # Why one Go module
//
// bunstore lives in the main module rather than in a module of its own. The
// root package, memstore and httpx never import bunstore, so a program that
// uses only them links no database driver; Go's module graph pruning means
// such an importer downloads only the go.mod files of the driver modules,
// not their code. A single module also keeps "go test ./..." covering every
// test without a go.work file.
//
// # Errors
//
// Every method maps database errors onto the root package's codes: a
// canceled or expired context returns the context's error; a database that
// is down, refuses connections or stays busy returns unavailable with no
// driver text; a unique violation returns conflict; a missing row returns
// not_found. Anything else is returned wrapped, which petstore.ErrorCode
// reports as internal, so driver text reaches logs, never clients.
//
// # Performance
//
// The queries of the request path (a page of pets with or without a
// status, one pet, a new pet, the key behind a token, and the
// Idempotency-Key records of a POST) do not go through bun: each is a
// *sql.Stmt prepared once per Store, on first use, and scanned by hand.
// On PostgreSQL pgx prepares them on the server even though bunopen sets
// default_query_exec_mode=simple_protocol, which governs only the SQL bun
// sends; behind PgBouncer in transaction mode that needs PgBouncer 1.21 or
// later with max_prepared_statements set. Query hooks registered on the
// *bun.DB do not see these statements.
//
// On a PostgreSQL handle from bunopen, the page and the pet go further:
// they run through pgx's own connection (a statement cached per
// connection), skipping database/sql's statement, rows and conversion
// layers, about a quarter of their CPU in the process. The
// connections are database/sql's, so the pool, its limits and its
// handling of broken connections are unchanged; a handle opened otherwise
// keeps the prepared statements.
//
// On PostgreSQL and MySQL, reads in flight together share queries: a read
// of a page takes the result of the next query for that page that starts
// after it arrived, never of one already under way, and on PostgreSQL the
// fetches of pets that arrive while one is being read are read together by
// the next query (WHERE id = ANY($1)). No answer is older than its
// request, so a created pet is still in the very next page; a read that
// finds nothing in flight runs at once, and under load a page many
// clients ask for costs one query per round trip instead of one each.
//
// On SQLite, writes of the request path that arrive while another is
// being committed are committed together in one transaction (group
// commit): one process then has one writer, and concurrent inserts cost a
// fraction of one transaction each. Each write returns only after its
// transaction has committed, with the durability OpenSQLite configures
// (WAL with synchronous=NORMAL: a committed write survives a crash of the
// process, and may be lost only with the last transactions before a power
// failure or operating system crash). A write the schema refuses fails
// alone; a database error fails the writes of its group.
//
// Also on SQLite, a page of pets or a pet read while the database has not
// changed since the same read is answered from memory. Before each such
// read the store asks SQLite two counters that move with every commit by
// any connection of any process (PRAGMA data_version) and every row the
// asking connection changed itself (total_changes()); when either moved,
// everything held is dropped. So a pet created, or a row changed by hand,
// anywhere, is in the very next read of every process: nothing is served
// stale, only unchanged data is read once instead of every time. The
// memory held is bounded (256 pages and 4,096 pets). PostgreSQL and MySQL
// keep nothing between reads.
//
// WatchChanges looks at PRAGMA data_version on a timer, so that a cache
// above the store (httpx.Cache) learns of any commit but the store's own
// creates, which the cache drops for itself, within the timer's interval
// (DefaultWatchEvery, 25 ms) plus one look.
//
// # Schema
//
// Migrate applies the Go migrations registered in this package with
// bun/migrate, marking each applied only when it succeeded; running it
// again is a no-op. The tables: pets (status limited to the three values by
// a CHECK, an index on (status, id) for keyset pages), api_keys (only the
// SHA-256 of each secret, unique), revoked_keys (revoked keys, by that
// hash), idempotency_keys, blobs, blob_locks, domains, domain_configs,
// store_orders (each project's beta store orders, indexed by (project_id,
// id) and (project_id, status, id)), deploys (each project's last
// successful deploy), webhook_endpoints and webhook_deliveries.
package bunstore
