package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"slices"
	"sync"

	"github.com/petstorekit/petstore"
)

// On SQLite the reads of the request path (a page of pets, one pet) are
// answered from memory while the database has not changed since they were
// read, and the store knows whether it has without running them: before
// each read it asks the connection it is given for two counters SQLite
// keeps, which costs a fraction of the page's query.
//
//   - data_version changes when any other connection, in this process or
//     another, has committed a change to the file since this connection
//     last looked (https://sqlite.org/pragma.html#pragma_data_version);
//   - total_changes() grows with every row this connection itself has
//     inserted, updated or deleted.
//
// Each pooled connection's pair is compared with the pair it gave last
// time; when it differs (or the connection is new), everything held is
// dropped. A commit therefore empties the cache before any read that
// starts after it returns: the connection that made it sees its own
// total_changes() grow, every other one sees data_version move. A pet
// created by any process is in the very next page read by every process,
// and a row changed by hand is read again, as before the cache.
//
// Reads that arrive together share one look at the counters: a read
// waits for the look that starts after it arrived (never one already
// under way, which might miss a commit the read must see), and every
// read that arrived while the previous look ran shares the next one. On
// 16 concurrent readers that makes a look a few reads' cost instead of
// each read's.
//
// A read that misses runs its query and keeps the result only if nothing
// was dropped in between. The cache holds at most maxCachedPages pages and
// maxCachedPets pets, and starts empty again when either is full, so a
// client walking every cursor costs bounded memory. PostgreSQL and MySQL
// have no counter as cheap to read as the query it would save, so their
// reads always run.
const (
	maxCachedPages = 256
	maxCachedPets  = 4096
)

// The counters' statements. PRAGMA data_version reads the file's
// change counter (opening a read transaction, as any read does);
// total_changes() is the connection's own count, read without one. The
// two cost less apart than in one SELECT through pragma_data_version(),
// which prepares the pragma again on every run.
var versionQueries = [2]string{"PRAGMA data_version", "SELECT total_changes()"}

// maxVersionConns bounds the connections whose statement and counters the
// cache remembers. A pool keeps its connections for the process's life
// (OpenSQLite's does), so this is reached only if connections are closed
// and opened again and again; past it, a look prepares its statements
// for itself alone and every read is a miss.
const maxVersionConns = 64

type pageKey struct {
	status petstore.PetStatus
	after  int64
	limit  int
}

type connVersion struct {
	stmts      [2]driver.Stmt // versionQueries prepared on the connection, or nil
	data, mine int64          // the counters it gave last
}

// readCache holds the pages and pets read since the database last changed.
type readCache struct {
	db *sql.DB

	looks flights[struct{}, uint64] // looks at the counters, shared as flights.go shares reads

	mu    sync.Mutex
	epoch uint64 // bumped whenever a change is seen; the maps hold this epoch's reads
	conns map[driver.Conn]*connVersion
	pages map[pageKey][]petstore.Pet
	pets  map[int64]petstore.Pet
}

func newReadCache(db *sql.DB) *readCache {
	return &readCache{db: db, conns: map[driver.Conn]*connVersion{},
		pages: map[pageKey][]petstore.Pet{}, pets: map[int64]petstore.Pet{}}
}

// check returns the epoch that a read starting now belongs to, from a
// look at the counters that started after the call (flights.do). ok is
// false when the counters could not be read (or ctx ended first): the
// caller then reads the database and keeps nothing.
func (c *readCache) check(ctx context.Context) (epoch uint64, ok bool) {
	epoch, _, err := c.looks.do(ctx, struct{}{}, c.look)
	return epoch, err == nil
}

// look reads the counters on one pooled connection and returns the epoch
// that reads starting now belong to.
func (c *readCache) look(ctx context.Context) (epoch uint64, err error) {
	// Waiting for a pooled connection honours ctx; the counters then
	// wait on no lock a reader must give up on (a WAL reader takes none
	// a writer holds), so they run without cancellation, which spares
	// the driver its per-call watch of ctx.
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	qctx := context.WithoutCancel(ctx)
	err = conn.Raw(func(dc any) error {
		d, ok := dc.(driver.Conn)
		if !ok {
			return driver.ErrSkip
		}
		data, mine, err := c.counters(qctx, d)
		if err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		v := c.conns[d]
		if v == nil {
			if len(c.conns) >= maxVersionConns {
				c.dropLocked()
				epoch = c.epoch
				return errTooManyConns
			}
			v = &connVersion{data: -1}
			c.conns[d] = v
		}
		if v.data != data || v.mine != mine {
			v.data, v.mine = data, mine
			c.dropLocked()
		}
		epoch = c.epoch
		return nil
	})
	return epoch, err
}

var errTooManyConns = errors.New("bunstore: read cache: too many connections")

// counters reads the two counters on d, with statements prepared once
// per connection.
func (c *readCache) counters(ctx context.Context, d driver.Conn) (data, mine int64, err error) {
	c.mu.Lock()
	var stmts [2]driver.Stmt
	if v := c.conns[d]; v != nil {
		stmts = v.stmts
	}
	c.mu.Unlock()
	if stmts[0] == nil {
		var kept bool
		if stmts, kept, err = c.prepare(ctx, d); err != nil {
			return 0, 0, err
		}
		if !kept {
			defer stmts[0].Close()
			defer stmts[1].Close()
		}
	}
	if data, err = queryInt(ctx, stmts[0]); err != nil {
		return 0, 0, err
	}
	if mine, err = queryInt(ctx, stmts[1]); err != nil {
		return 0, 0, err
	}
	return data, mine, nil
}

// prepare prepares versionQueries on d and remembers them for d (kept),
// unless d is one connection too many (see maxVersionConns).
func (c *readCache) prepare(ctx context.Context, d driver.Conn) (stmts [2]driver.Stmt, kept bool, err error) {
	p, ok := d.(driver.ConnPrepareContext)
	if !ok {
		return stmts, false, driver.ErrSkip
	}
	for i, q := range versionQueries {
		if stmts[i], err = p.PrepareContext(ctx, q); err != nil {
			if i > 0 {
				stmts[0].Close()
			}
			return [2]driver.Stmt{}, false, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.conns[d]
	if v == nil && len(c.conns) < maxVersionConns {
		v = &connVersion{data: -1}
		c.conns[d] = v
	}
	if v == nil {
		return stmts, false, nil
	}
	v.stmts = stmts
	return stmts, true, nil
}

// queryInt runs st, a query of one integer.
func queryInt(ctx context.Context, st driver.Stmt) (int64, error) {
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		return 0, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var dest [1]driver.Value
	if err := rows.Next(dest[:]); err != nil {
		return 0, err
	}
	n, ok := dest[0].(int64)
	if !ok {
		return 0, driver.ErrSkip
	}
	return n, nil
}

// dropLocked forgets every read: the database changed. c.mu must be held.
func (c *readCache) dropLocked() {
	c.epoch++
	if len(c.pages) > 0 {
		c.pages = map[pageKey][]petstore.Pet{}
	}
	if len(c.pets) > 0 {
		c.pets = map[int64]petstore.Pet{}
	}
}

// page returns a copy of the page read in epoch under k, if it is held.
func (c *readCache) page(epoch uint64, k pageKey) ([]petstore.Pet, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return nil, false
	}
	pets, ok := c.pages[k]
	if !ok {
		return nil, false
	}
	return slices.Clone(pets), true
}

// putPage keeps a copy of a page read in epoch, unless the database
// changed since.
func (c *readCache) putPage(epoch uint64, k pageKey, pets []petstore.Pet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if len(c.pages) >= maxCachedPages {
		c.pages = map[pageKey][]petstore.Pet{}
	}
	c.pages[k] = slices.Clone(pets)
}

// pet returns the pet read in epoch with id, if it is held.
func (c *readCache) pet(epoch uint64, id int64) (petstore.Pet, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return petstore.Pet{}, false
	}
	p, ok := c.pets[id]
	return p, ok
}

// putPet keeps a pet read in epoch, unless the database changed since.
func (c *readCache) putPet(epoch uint64, p petstore.Pet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if len(c.pets) >= maxCachedPets {
		c.pets = map[int64]petstore.Pet{}
	}
	c.pets[p.ID] = p
}
