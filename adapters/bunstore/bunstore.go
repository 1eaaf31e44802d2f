package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Store implements the petstore store interfaces over a *bun.DB of any of
// the three supported dialects. It is safe for concurrent use; many
// processes may share one database.
type Store struct {
	db *bun.DB
	q  *queries
	pg bool
	// group commits concurrent hot writes together on SQLite; nil on the
	// other databases, which have no single write lock.
	group *groupCommitter
	// reads answers unchanged reads from memory on SQLite (readcache.go);
	// nil on the other databases.
	reads *readCache
	// native says whether the connections run reads natively on
	// PostgreSQL (native.go): nativeUnknown, nativeYes or nativeNo.
	native atomic.Int32
	// Identical reads in flight share a query on PostgreSQL and MySQL
	// (flights.go).
	petReads  flights[int64, petstore.Pet]
	pageReads flights[pageKey, []petstore.Pet]
	// Fetches of pets in flight together are one query on PostgreSQL
	// (petbatch.go).
	petBatches petBatches
	// noIdleTxTimeout is set once the server turned out to be MySQL,
	// which lacks MariaDB's idle_transaction_timeout (boundTx).
	noIdleTxTimeout atomic.Bool
	// dbNow is the SQL expression of the database's clock in Unix
	// nanoseconds, on which webhook leases and due times, and blob locks'
	// expiry, are judged; empty with CallerClock (webhooks.go).
	dbNow string
}

// Option configures a Store.
type Option func(*Store)

// CallerClock makes the Store judge webhook leases, due times, the age
// of deliveries and the end of a rolled secret's overlap, and blob locks'
// expiry, on the times its callers pass (webhook.Config.Now,
// acme.Config.Now), as a test with a fake clock needs, rather than on the
// database's clock. Processes sharing the database must then keep their
// clocks within webhook.Config.Timeout of each other: one whose clock
// runs ahead by more takes over attempts still in flight and sends them
// again, and makes retries that early, and each moves the overlap's end
// by its clock's error; and one whose clock runs 20 seconds ahead takes
// over certificate locks still held (adapters/acme).
func CallerClock() Option {
	return func(s *Store) { s.dbNow = "" }
}

var _ petstore.Store = (*Store)(nil)

// New returns a store over db, whose schema Migrate has created. The hot
// queries are prepared on first use, so New never touches the database.
// Webhook leases and due times, and blob locks' expiry, are judged on the
// database's clock unless opts include CallerClock.
func New(db *bun.DB, opts ...Option) *Store {
	d := db.Dialect().Name()
	s := &Store{db: db, q: newQueries(d), pg: d == dialect.PG, dbNow: dbNowSQL(d)}
	for _, o := range opts {
		o(s)
	}
	if d == dialect.SQLite {
		s.group = newGroupCommitter(db.DB)
		s.reads = newReadCache(db.DB)
	}
	return s
}

// write runs fn, a write of the hot path: on SQLite in a transaction
// shared with concurrent writes (tx is that transaction), elsewhere on its
// own (tx is nil). It returns once the write has committed.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.group == nil {
		return fn(ctx, nil)
	}
	return s.group.do(ctx, fn)
}

// onTx is st bound to tx, or st itself when tx is nil.
func onTx(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	if tx == nil {
		return st
	}
	return tx.StmtContext(ctx, st)
}

// DB returns the database the store uses, for callers that add their own
// tables or run Migrate.
func (s *Store) DB() *bun.DB { return s.db }

type keyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	Seq       int64  `bun:"seq,pk,autoincrement"` // creation order, for ListKeys
	ID        string `bun:"id,notnull"`
	Hash      string `bun:"hash,notnull"`
	ProjectID string `bun:"project_id,notnull"`
	Plan      string `bun:"plan,notnull"`
	PerMinute int64  `bun:"per_minute,notnull"`
	PerDay    int64  `bun:"per_day,notnull"`
	// Unix nanoseconds: one integer type means the same thing on all
	// three databases, with no time zone or precision conversion.
	CreatedAtNS int64 `bun:"created_at_ns,notnull"`
}

func newKeyRow(k petstore.APIKey, hash string) keyRow {
	var ns int64
	if !k.CreatedAt.IsZero() {
		ns = k.CreatedAt.UnixNano()
	}
	return keyRow{ID: k.ID, Hash: hash, ProjectID: k.ProjectID, Plan: string(k.Plan),
		PerMinute: k.Limits.PerMinute, PerDay: k.Limits.PerDay, CreatedAtNS: ns}
}

func (r keyRow) key() petstore.APIKey {
	k := petstore.APIKey{ID: r.ID, ProjectID: r.ProjectID, Plan: petstore.Plan(r.Plan),
		Limits: petstore.Limits{PerMinute: r.PerMinute, PerDay: r.PerDay}}
	if r.CreatedAtNS != 0 {
		k.CreatedAt = time.Unix(0, r.CreatedAtNS).UTC()
	}
	return k
}

// CreatePet implements petstore.PetStore. Inside CreateOnce it joins
// that call's transaction.
func (s *Store) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	pet := petstore.Pet{Name: p.Name, CategoryID: p.CategoryID, Status: p.Status}
	args := []any{p.Name, p.CategoryID, nullString(string(p.Status))}
	insert := func(exec func(...any) (sql.Result, error), queryRow func(...any) *sql.Row) error {
		if s.pg { // no LastInsertId: RETURNING id
			return queryRow(args...).Scan(&pet.ID)
		}
		res, err := exec(args...)
		if err != nil {
			return err
		}
		pet.ID, err = res.LastInsertId()
		return err
	}
	var err error
	if tx := s.unitTx(ctx); tx != nil {
		// Not the prepared statement: preparing it may need a second
		// connection, which an in-memory SQLite database (one
		// connection) lacks while the transaction holds it.
		q := s.q.insertPet.query
		err = insert(func(a ...any) (sql.Result, error) { return tx.ExecContext(ctx, q, a...) },
			func(a ...any) *sql.Row { return tx.QueryRowContext(ctx, q, a...) })
	} else {
		var st *sql.Stmt
		if st, err = s.q.insertPet.get(ctx, s.db.DB); err == nil {
			err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				st := onTx(ctx, tx, st)
				return insert(func(a ...any) (sql.Result, error) { return st.ExecContext(ctx, a...) },
					func(a ...any) *sql.Row { return st.QueryRowContext(ctx, a...) })
			})
		}
	}
	if err != nil {
		return petstore.Pet{}, mapErr(ctx, "create pet", err)
	}
	return pet, nil
}

// scanPet reads the petColumns of one row.
func scanPet(scan func(dest ...any) error) (petstore.Pet, error) {
	var p petstore.Pet
	var status sql.NullString // NULL: the pet has no status
	err := scan(&p.ID, &p.Name, &p.CategoryID, &status)
	p.Status = petstore.PetStatus(status.String)
	return p, err
}

// GetPet implements petstore.PetStore. On SQLite an unchanged pet comes
// from memory; elsewhere, fetches in flight together share a query that
// started after each arrived: of one pet on MySQL, of all their pets on
// PostgreSQL (see the package documentation).
func (s *Store) GetPet(ctx context.Context, id int64) (petstore.Pet, error) {
	if tx := s.unitTx(ctx); tx != nil {
		// Inside CreateOnce (an order checking its pet): read on its
		// transaction, as CreatePet writes on it.
		p, err := scanPet(tx.QueryRowContext(ctx, s.q.getPet.query, id).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return petstore.Pet{}, petstore.PetNotFound(id)
		}
		return p, mapErr(ctx, "get pet", err)
	}
	if s.reads == nil {
		one := func(ctx context.Context) (petstore.Pet, error) { return s.getPet(ctx, id) }
		if s.pg {
			return s.petBatches.get(ctx, id, s.getPets, one)
		}
		p, _, err := s.petReads.do(ctx, id, one)
		return p, err
	}
	epoch, ok := s.reads.check(ctx)
	if !ok {
		return s.getPet(ctx, id)
	}
	if p, hit := s.reads.pet(epoch, id); hit {
		return p, nil
	}
	p, err := s.getPet(ctx, id)
	if err == nil {
		s.reads.putPet(epoch, p)
	}
	return p, err
}

func (s *Store) getPet(ctx context.Context, id int64) (petstore.Pet, error) {
	var p petstore.Pet
	var status sql.NullString
	found := false
	if ok, err := s.queryRows(ctx, s.q.getPet.query, []any{id}, []any{&p.ID, &p.Name, &p.CategoryID, &status},
		func() error { found = true; return nil }); ok {
		switch {
		case err != nil:
			return petstore.Pet{}, mapErr(ctx, "get pet", err)
		case !found:
			return petstore.Pet{}, petstore.PetNotFound(id)
		}
		p.Status = petstore.PetStatus(status.String)
		return p, nil
	}
	st, err := s.q.getPet.get(ctx, s.db.DB)
	if err != nil {
		return petstore.Pet{}, mapErr(ctx, "get pet", err)
	}
	p, err = scanPet(st.QueryRowContext(ctx, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.Pet{}, petstore.PetNotFound(id)
	}
	if err != nil {
		return petstore.Pet{}, mapErr(ctx, "get pet", err)
	}
	return p, nil
}

// getPets reads the pets of ids on PostgreSQL; missing ones are absent
// from the map.
func (s *Store) getPets(ctx context.Context, ids []int64) (map[int64]petstore.Pet, error) {
	pets := make(map[int64]petstore.Pet, len(ids))
	var p petstore.Pet
	var status sql.NullString
	add := func() error {
		p.Status = petstore.PetStatus(status.String)
		pets[p.ID] = p
		return nil
	}
	ok, err := s.queryRows(ctx, s.q.getPets.query, []any{ids}, []any{&p.ID, &p.Name, &p.CategoryID, &status}, add)
	if !ok {
		var st *sql.Stmt
		var rows *sql.Rows
		if st, err = s.q.getPets.get(ctx, s.db.DB); err == nil {
			rows, err = st.QueryContext(ctx, ids)
		}
		if err == nil {
			defer rows.Close()
			for err == nil && rows.Next() {
				if err = rows.Scan(&p.ID, &p.Name, &p.CategoryID, &status); err == nil {
					err = add()
				}
			}
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if err != nil {
		return nil, mapErr(ctx, "get pets", err)
	}
	return pets, nil
}

// ListPets implements petstore.PetStore. It is a keyset query: the cost of
// a page does not grow with the number of pets before it, or after it. On
// SQLite an unchanged page comes from memory; elsewhere, reads of one page
// in flight together share a query that started after each arrived (see
// the package documentation).
func (s *Store) ListPets(ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	if q.Limit <= 0 {
		return []petstore.Pet{}, ctx.Err()
	}
	key := pageKey{status: q.Status, after: q.AfterID, limit: q.Limit}
	if s.reads == nil {
		pets, _, err := s.pageReads.do(ctx, key, func(ctx context.Context) ([]petstore.Pet, error) { return s.listPets(ctx, q) })
		// Every caller gets its own: the reads that shared this one copy
		// the same slice, perhaps while this caller writes to its own.
		return slices.Clone(pets), err
	}
	epoch, ok := s.reads.check(ctx)
	if !ok {
		return s.listPets(ctx, q)
	}
	if pets, hit := s.reads.page(epoch, key); hit {
		return pets, nil
	}
	pets, err := s.listPets(ctx, q)
	if err == nil {
		s.reads.putPage(epoch, key, pets)
	}
	return pets, err
}

func (s *Store) listPets(ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	pets := make([]petstore.Pet, 0, min(q.Limit, 1000))
	query, args := s.q.listPets.query, []any{q.AfterID, int64(q.Limit)}
	if q.Status != "" {
		query, args = s.q.listPetsStatus.query, []any{string(q.Status), q.AfterID, int64(q.Limit)}
	}
	var p petstore.Pet
	var status sql.NullString
	if ok, err := s.queryRows(ctx, query, args, []any{&p.ID, &p.Name, &p.CategoryID, &status}, func() error {
		p.Status = petstore.PetStatus(status.String)
		pets = append(pets, p)
		return nil
	}); ok {
		if err != nil {
			return nil, mapErr(ctx, "list pets", err)
		}
		return pets, nil
	}
	var rows *sql.Rows
	st, err := s.q.listPets.get(ctx, s.db.DB)
	if q.Status != "" {
		st, err = s.q.listPetsStatus.get(ctx, s.db.DB)
	}
	if err == nil {
		if q.Status != "" {
			rows, err = st.QueryContext(ctx, string(q.Status), q.AfterID, int64(q.Limit))
		} else {
			rows, err = st.QueryContext(ctx, q.AfterID, int64(q.Limit))
		}
	}
	if err != nil {
		return nil, mapErr(ctx, "list pets", err)
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPet(rows.Scan)
		if err != nil {
			return nil, mapErr(ctx, "list pets", err)
		}
		pets = append(pets, p)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(ctx, "list pets", err)
	}
	return pets, nil
}

// CreateKey implements petstore.KeyStore.
func (s *Store) CreateKey(ctx context.Context, key petstore.APIKey, hash string) error {
	if err := key.CheckStorable(); err != nil {
		return err
	}
	row := newKeyRow(key, hash)
	if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		return mapErr(ctx, "create key", err)
	}
	return nil
}

// UpsertKey implements petstore.KeyStore. Two processes upserting the same
// hash at once both succeed: the loser of the insert race finds the
// winner's row and updates it. A revoke landing between the lookup and the
// update is found too: the update then finds no key, and the next lookup
// finds it revoked.
func (s *Store) UpsertKey(ctx context.Context, key petstore.APIKey, hash string) (petstore.APIKey, error) {
	if err := key.CheckStorable(); err != nil {
		return petstore.APIKey{}, err
	}
	// A turn ends without an answer only on a change another process
	// made since it looked (an insert of the hash, a revoke); a key
	// changing on every turn is answered with a conflict.
	conflicted := false
	for range 3 {
		existing, _, err := s.KeyByHash(ctx, hash)
		if err == nil {
			updated, err := s.setKeyPlan(ctx, existing.ID, key.Plan, key.Limits)
			if errors.Is(err, sql.ErrNoRows) {
				continue // revoked since the lookup
			}
			if err != nil {
				return petstore.APIKey{}, mapErr(ctx, "upsert key", err)
			}
			return updated, nil
		}
		if petstore.ErrorCode(err) != petstore.CodeNotFound {
			return petstore.APIKey{}, err
		}
		// Not stored: perhaps revoked since the caller looked. A revoke
		// moves the row in one transaction, so once the lookup above
		// misses it, this one finds it.
		if revoked, err := s.RevokedKey(ctx, hash); err == nil {
			return revoked, petstore.ErrKeyRevoked
		} else if petstore.ErrorCode(err) != petstore.CodeNotFound {
			return petstore.APIKey{}, err
		}
		row := newKeyRow(key, hash)
		_, err = s.db.NewInsert().Model(&row).Exec(ctx)
		if err == nil {
			return row.key(), nil
		}
		err = mapErr(ctx, "upsert key", err)
		if petstore.ErrorCode(err) != petstore.CodeConflict || conflicted {
			return petstore.APIKey{}, err
		}
		// Conflict: either another process inserted this hash meanwhile
		// (the lookup now finds it) or key.ID is taken (the insert fails
		// again and its conflict is returned).
		conflicted = true
	}
	return petstore.APIKey{}, petstore.Errorf(petstore.CodeConflict, "key changed while it was upserted; try again")
}

// KeyByHash implements petstore.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (petstore.APIKey, string, error) {
	st, err := s.q.keyByHash.get(ctx, s.db.DB)
	if err != nil {
		return petstore.APIKey{}, "", mapErr(ctx, "key by hash", err)
	}
	var row keyRow
	err = st.QueryRowContext(ctx, hash).Scan(&row.ID, &row.Hash, &row.ProjectID, &row.Plan,
		&row.PerMinute, &row.PerDay, &row.CreatedAtNS)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.APIKey{}, "", petstore.Errorf(petstore.CodeNotFound, "key not found")
	}
	if err != nil {
		return petstore.APIKey{}, "", mapErr(ctx, "key by hash", err)
	}
	return row.key(), row.Hash, nil
}

// ListKeys implements petstore.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]petstore.APIKey, error) {
	var rows []keyRow
	// Not by seq: a key reinstated (UnrevokeKey) is stored again, with a
	// new seq, but keeps its creation time and id.
	if err := s.db.NewSelect().Model(&rows).Order("created_at_ns ASC", "id ASC").Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list keys", err)
	}
	keys := make([]petstore.APIKey, len(rows))
	for i, r := range rows {
		keys[i] = r.key()
	}
	return keys, nil
}

// exactID reports whether id can name a stored key. MySQL's utf8mb4_bin
// collation pads with spaces, so "key_x " would match key_x there (and
// be announced to other processes' key caches as typed); no key id ends
// in a space, nor is longer than any stored or not storable.
func exactID(id string) bool {
	return !strings.HasSuffix(id, " ") && len(id) <= petstore.MaxKeyIDBytes && petstore.Storable(id)
}

// SetKeyPlan implements petstore.KeyStore.
func (s *Store) SetKeyPlan(ctx context.Context, id string, plan petstore.Plan, limits petstore.Limits) (petstore.APIKey, error) {
	if err := plan.CheckStorable(); err != nil { // the input first, as every store
		return petstore.APIKey{}, err
	}
	if !exactID(id) {
		return petstore.APIKey{}, keyNotFound(id)
	}
	key, err := s.setKeyPlan(ctx, id, plan, limits)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.APIKey{}, keyNotFound(id)
	}
	if err != nil {
		return petstore.APIKey{}, mapErr(ctx, "set key plan", err)
	}
	return key, nil
}

// setKeyPlan sets the plan and limits of the key with id and returns it,
// or sql.ErrNoRows when no key has id. It reads the row FOR UPDATE in the
// transaction that updates it, as DeleteKey does (the same lock, taken
// the same way, so the two take turns and never deadlock on MySQL): the
// answer is the row as updated, never one a revoke moved away meanwhile,
// and it does not count updated rows, which MySQL reports as zero for an
// update that changes nothing unless the connection sets clientFoundRows.
func (s *Store) setKeyPlan(ctx context.Context, id string, plan petstore.Plan, limits petstore.Limits) (petstore.APIKey, error) {
	var row keyRow
	err := s.runBoundTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewSelect().Model(&row).Where("id = ?", id)
		if s.db.Dialect().Name() != dialect.SQLite {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		row.Plan, row.PerMinute, row.PerDay = string(plan), limits.PerMinute, limits.PerDay
		_, err := tx.NewUpdate().Model((*keyRow)(nil)).
			Set("plan = ?", row.Plan).
			Set("per_minute = ?", row.PerMinute).
			Set("per_day = ?", row.PerDay).
			Where("id = ?", id).Exec(ctx)
		return err
	})
	if err != nil {
		return petstore.APIKey{}, err
	}
	return row.key(), nil
}

// runBoundTx runs fn in a transaction with options opts, as the changes
// that read a key's row FOR UPDATE and the purge of idempotency records
// do. Should its link go into a black hole, the database ends it by
// itself once the caller's deadline has passed (boundTx), rather than
// keep the rows it locked, for other processes' changes to wait on,
// until it notices the connection is gone (PostgreSQL) or for
// innodb_lock_wait_timeout each (MariaDB). Without a deadline, or on
// SQLite, it is a plain transaction.
func (s *Store) runBoundTx(ctx context.Context, opts *sql.TxOptions, fn func(context.Context, bun.Tx) error) error {
	dl, ok := ctx.Deadline()
	if !ok || s.db.Dialect().Name() == dialect.SQLite {
		return s.db.RunInTx(ctx, opts, fn)
	}
	bounded := func(ctx context.Context, tx bun.Tx) error {
		if err := s.boundTx(ctx, tx.Tx, time.Until(dl)); err != nil {
			return err
		}
		return fn(ctx, tx)
	}
	if s.pg {
		return s.db.RunInTx(ctx, opts, bounded)
	}
	// On MySQL and MariaDB boundTx sets the session's timeouts: the
	// transaction runs on a connection of its own, which gets them back
	// before it returns to the pool.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer s.resetSession(conn.Conn)
	return conn.RunInTx(ctx, opts, bounded)
}

// revokedRow is a revoked key, kept under the hash of its secret.
type revokedRow struct {
	bun.BaseModel `bun:"table:revoked_keys"`

	Hash        string `bun:"hash,pk"`
	ID          string `bun:"id,notnull"`
	ProjectID   string `bun:"project_id,notnull"`
	Plan        string `bun:"plan,notnull"`
	PerMinute   int64  `bun:"per_minute,notnull"`
	PerDay      int64  `bun:"per_day,notnull"`
	CreatedAtNS int64  `bun:"created_at_ns,notnull"`
	RevokedAtNS int64  `bun:"revoked_at_ns,notnull"`
}

func (r revokedRow) keyRow() keyRow {
	return keyRow{ID: r.ID, Hash: r.Hash, ProjectID: r.ProjectID, Plan: r.Plan,
		PerMinute: r.PerMinute, PerDay: r.PerDay, CreatedAtNS: r.CreatedAtNS}
}

// DeleteKey implements petstore.KeyStore. The key moves to revoked_keys in
// the transaction that deletes it, so no restart finds it in neither. The
// key's row is read FOR UPDATE (SQLite runs one write at a time anyway):
// concurrent revokes of one key then take turns, and the later ones find
// no key (not_found) instead of deadlocking over revoked_keys on MySQL.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	if !exactID(id) {
		return keyNotFound(id)
	}
	err := s.runBoundTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var row keyRow
		q := tx.NewSelect().Model(&row).Where("id = ?", id)
		if s.db.Dialect().Name() != dialect.SQLite {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		rev := revokedRow{Hash: row.Hash, ID: row.ID, ProjectID: row.ProjectID, Plan: row.Plan,
			PerMinute: row.PerMinute, PerDay: row.PerDay, CreatedAtNS: row.CreatedAtNS, RevokedAtNS: time.Now().UnixNano()}
		if _, err := tx.NewDelete().Model((*revokedRow)(nil)).Where("hash = ?", row.Hash).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&rev).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*keyRow)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return keyNotFound(id)
	}
	return mapErr(ctx, "delete key", err)
}

// RevokedKey implements petstore.KeyStore.
func (s *Store) RevokedKey(ctx context.Context, hash string) (petstore.APIKey, error) {
	var row revokedRow
	err := s.db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeNotFound, "no revoked key")
	}
	if err != nil {
		return petstore.APIKey{}, mapErr(ctx, "revoked key", err)
	}
	return row.keyRow().key(), nil
}

// UnrevokeKey implements petstore.KeyStore.
func (s *Store) UnrevokeKey(ctx context.Context, id string) (petstore.APIKey, error) {
	if !exactID(id) {
		return petstore.APIKey{}, noRevokedKey(id)
	}
	var key petstore.APIKey
	err := s.runBoundTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var rev revokedRow
		// FOR UPDATE, as DeleteKey: concurrent reinstatements of one key
		// take turns, and the later ones find no revoked key (not_found)
		// rather than a conflict with the first.
		q := tx.NewSelect().Model(&rev).Where("id = ?", id).Limit(1)
		if s.db.Dialect().Name() != dialect.SQLite {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		row := rev.keyRow()
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return err
		}
		key = row.key()
		_, err := tx.NewDelete().Model((*revokedRow)(nil)).Where("hash = ?", rev.Hash).Exec(ctx)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.APIKey{}, noRevokedKey(id)
	}
	if err != nil {
		return petstore.APIKey{}, mapErr(ctx, "unrevoke key", err)
	}
	return key, nil
}
