package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun"
)

var _ petstore.IdempotencyStore = (*Store)(nil)

type idemRow struct {
	bun.BaseModel `bun:"table:idempotency_keys"`

	Scope       string `bun:"scope,pk"`
	Key         string `bun:"idem_key,pk"`
	RequestHash string `bun:"request_hash,notnull"`
	CreatedAtNS int64  `bun:"created_at_ns,notnull"`
	Completed   bool   `bun:"completed,notnull"`
	Status      int    `bun:"status,notnull"`
	ContentType string `bun:"content_type,notnull"`
	Location    string `bun:"location,notnull"`
	Body        []byte `bun:"body"`
}

func (r idemRow) record() petstore.IdempotencyRecord {
	return petstore.IdempotencyRecord{Scope: r.Scope, Key: r.Key, RequestHash: r.RequestHash,
		CreatedAt: time.Unix(0, r.CreatedAtNS).UTC(), Completed: r.Completed, Status: r.Status,
		ContentType: r.ContentType, Location: r.Location, Body: r.Body}
}

// CreateOnce implements petstore.IdempotencyStore. One transaction
// inserts the record, runs create (whose CreatePet and CreateOrder join
// it, see unitTx) and stores create's response on the record, so the
// creation and its record commit together or not at all. No row says a
// key is in flight: two calls with one key meet at the primary key on
// (scope, idem_key), where the second waits for the first's transaction
// and, once it commits, conflicts and reads its record. A transaction
// whose connection was lost (a black hole, a cut) holds the key only
// until the database ends it: on PostgreSQL and MariaDB the request's
// remaining time bounds each wait between its statements (boundTx).
// A conflict with an expired record deletes that record (deleteExpired)
// and inserts again.
func (s *Store) CreateOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (petstore.IdempotencyRecord, bool, error) {
	if err := rec.CheckStorable(); err != nil {
		return petstore.IdempotencyRecord{}, false, err
	}
	for attempt := 0; ; attempt++ {
		out, ran, err := s.createOnce(ctx, rec, create)
		if ran || err == nil {
			return out, ran, mapErr(ctx, "create once", err)
		}
		if isDeadlock(err) && attempt < 5 && ctx.Err() == nil {
			// Waiters for a first call that rolled back (MariaDB's insert
			// locks): create never ran, so trying again is safe.
			continue
		}
		if err = mapErr(ctx, "create once", err); petstore.ErrorCode(err) != petstore.CodeConflict {
			return petstore.IdempotencyRecord{}, false, err
		}
		stored, err := s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
		// not_found: the record was purged between the conflict and this
		// read; run again, once.
		if petstore.ErrorCode(err) == petstore.CodeNotFound && attempt == 0 {
			continue
		}
		// Expired: delete that record alone and run again. A delete that
		// lost a deadlock to a concurrent call's (MariaDB) deleted
		// nothing: the next attempt finds what that call left.
		if err == nil && stored.Expired(rec.CreatedAt) && attempt < 5 && ctx.Err() == nil {
			if err = s.deleteExpired(ctx, rec); err != nil && !isDeadlock(err) {
				return petstore.IdempotencyRecord{}, false, mapErr(ctx, "delete expired idempotency key", err)
			}
			continue
		}
		if err == nil && stored.Expired(rec.CreatedAt) {
			// Still expired after every try: an answer past its 24 hours
			// must not be replayed; the client's retry runs again.
			return petstore.IdempotencyRecord{}, false, petstore.Errorf(petstore.CodeUnavailable, "the Idempotency-Key's expired record is being replaced; try again")
		}
		return stored, false, err
	}
}

// deleteExpired deletes the record of rec's key if it has expired at
// rec.CreatedAt; a record stored since by a concurrent call is kept.
func (s *Store) deleteExpired(ctx context.Context, rec petstore.IdempotencyRecord) error {
	_, err := s.db.NewDelete().Model((*idemRow)(nil)).
		Where("scope = ? AND idem_key = ?", rec.Scope, rec.Key).
		Where("created_at_ns < ?", rec.CreatedAt.Add(-petstore.IdempotencyTTL).UnixNano()).
		Exec(ctx)
	return err
}

// savepoint names the part of a shared SQLite transaction that is one
// CreateOnce call, so that a response not kept takes back only its own
// writes.
const savepoint = "create_once"

// createOnce is one attempt of CreateOnce: ran reports whether create ran;
// a conflict error means another call's record holds the key.
func (s *Store) createOnce(ctx context.Context, rec petstore.IdempotencyRecord, create func(context.Context) (petstore.IdempotencyRecord, bool)) (out petstore.IdempotencyRecord, ran bool, err error) {
	// A create that panics writes nothing and leaves no transaction or
	// SQLite group behind: the panic is caught where create runs (on
	// SQLite, maybe another request's goroutine) and raised again here,
	// on the caller's, once everything is rolled back.
	var panicked any
	defer func() {
		if panicked != nil {
			panic(panicked)
		}
	}()
	run := func(ctx context.Context) (out petstore.IdempotencyRecord, keep bool) {
		defer func() {
			if p := recover(); p != nil {
				panicked, keep = p, false
			}
		}()
		return create(ctx)
	}
	claim, err := s.q.idemClaim.get(ctx, s.db.DB)
	if err != nil {
		return out, false, err
	}
	complete, err := s.q.idemComplete.get(ctx, s.db.DB)
	if err != nil {
		return out, false, err
	}
	// refused is why the response create returned cannot be kept.
	var refused error
	// body runs the record's statements and create on tx, under ctx.
	body := func(ctx context.Context, tx *sql.Tx) (keep bool, err error) {
		if _, err := tx.StmtContext(ctx, claim).ExecContext(ctx, rec.Scope, rec.Key, rec.RequestHash, rec.CreatedAt.UnixNano()); err != nil {
			return false, err
		}
		ran = true
		out, keep = run(context.WithValue(ctx, unitKey{}, &unit{store: s, tx: tx}))
		if !keep {
			return false, nil
		}
		if refused = out.CheckStorable(); refused != nil {
			return false, nil // taken back, as a response not kept is
		}
		resp := out.Body
		if resp == nil {
			resp = []byte{} // a completed record's body is empty, not absent
		}
		_, err = tx.StmtContext(ctx, complete).ExecContext(ctx, out.Status, out.ContentType, out.Location, resp, rec.Scope, rec.Key)
		return true, err
	}
	if s.group != nil {
		err = s.group.do(ctx, func(gctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(gctx, "SAVEPOINT "+savepoint); err != nil {
				return err
			}
			// Not the caller's cancellation: a client hanging up inside
			// the group would roll back every other write in it. SQLite
			// is in the process, so the statements cannot hang.
			keep, err := body(context.WithoutCancel(ctx), tx)
			if err == nil && keep {
				_, err = tx.ExecContext(gctx, "RELEASE "+savepoint)
				return err
			}
			if err != nil && !isConstraint(err) {
				return err // the group rolls back
			}
			if _, rerr := tx.ExecContext(gctx, "ROLLBACK TO "+savepoint+"; RELEASE "+savepoint); rerr != nil {
				return rerr
			}
			return err // nil, or the conflict, which leaves the group's transaction open
		})
		if err == nil && refused != nil {
			return petstore.IdempotencyRecord{}, ran, refused
		}
		return out, ran, err
	}
	// On MySQL and MariaDB boundTx can only set the session's timeouts,
	// so the transaction runs on a connection of its own that gets them
	// back before it returns to the pool (after the transaction ends).
	begin := s.db.DB.BeginTx
	if !s.pg {
		conn, cerr := s.db.DB.Conn(ctx)
		if cerr != nil {
			return out, false, cerr
		}
		defer s.resetSession(conn)
		begin = conn.BeginTx
	}
	tx, err := begin(ctx, nil)
	if err != nil {
		return out, false, err
	}
	defer func() {
		if err != nil || !ran {
			_ = tx.Rollback()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		if err = s.boundTx(ctx, tx, time.Until(dl)); err != nil {
			return out, false, err
		}
	}
	// The caller's context: each statement ends with the request.
	keep, err := body(ctx, tx)
	if err != nil {
		return out, ran, err
	}
	if refused != nil {
		return petstore.IdempotencyRecord{}, ran, refused // rolled back
	}
	if !keep {
		return out, ran, tx.Rollback()
	}
	return out, ran, tx.Commit()
}

// boundTx makes the database end tx by itself, should its connection go
// into a black hole, at most d after its last statement: on PostgreSQL,
// for this transaction only (statement_timeout,
// idle_in_transaction_session_timeout); on MariaDB, for the session
// (idle_transaction_timeout, which only applies inside transactions, and
// innodb_lock_wait_timeout, which bounds waiting for another
// transaction's key). MySQL has no idle transaction timeout: there only
// the lock wait is bounded, and an orphan lasts until the server sees its
// connection close.
func (s *Store) boundTx(ctx context.Context, tx *sql.Tx, d time.Duration) error {
	if s.pg {
		ms := strconv.FormatInt(max(1, d.Milliseconds()), 10)
		_, err := tx.ExecContext(ctx, "SELECT set_config('statement_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $1, true)", ms)
		return err
	}
	if s.group != nil {
		return nil // SQLite: in-process, no link to lose
	}
	secs := max(1, int64(math.Ceil(d.Seconds())))
	if !s.noIdleTxTimeout.Load() {
		_, err := tx.ExecContext(ctx, "SET SESSION idle_transaction_timeout = ?, innodb_lock_wait_timeout = ?", secs, secs)
		if err == nil || !strings.HasPrefix(err.Error(), "Error 1193 ") { // 1193: unknown system variable
			return err
		}
		s.noIdleTxTimeout.Store(true) // MySQL
	}
	_, err := tx.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = ?", secs)
	return err
}

// resetSession gives a MySQL or MariaDB connection that boundTx may have
// shortened its session's timeouts back before it returns to the pool, so
// no later transaction on it inherits a request's second or two; a
// connection that cannot be reset (its link is gone) is discarded. It
// runs off the request: the answer does not wait for it.
func (s *Store) resetSession(conn *sql.Conn) {
	go func() {
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reset := "SET SESSION idle_transaction_timeout = DEFAULT, innodb_lock_wait_timeout = DEFAULT"
		if s.noIdleTxTimeout.Load() {
			reset = "SET SESSION innodb_lock_wait_timeout = DEFAULT" // MySQL
		}
		if _, err := conn.ExecContext(ctx, reset); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
}

// unit is the transaction of one CreateOnce call, which the store's
// creations called with its context join.
type unit struct {
	store *Store
	tx    *sql.Tx
}

type unitKey struct{}

// unitTx returns the transaction of the CreateOnce call of s that ctx
// runs in, or nil.
func (s *Store) unitTx(ctx context.Context) *sql.Tx {
	if u, ok := ctx.Value(unitKey{}).(*unit); ok && u.store == s {
		return u.tx
	}
	return nil
}

// GetIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) GetIdempotencyKey(ctx context.Context, scope, key string) (petstore.IdempotencyRecord, error) {
	if (petstore.IdempotencyRecord{Scope: scope, Key: key}).CheckStorable() != nil {
		return petstore.IdempotencyRecord{}, petstore.Errorf(petstore.CodeNotFound, "idempotency key not found")
	}
	st, err := s.q.idemGet.get(ctx, s.db.DB)
	if err != nil {
		return petstore.IdempotencyRecord{}, mapErr(ctx, "get idempotency key", err)
	}
	var row idemRow
	err = st.QueryRowContext(ctx, scope, key).Scan(&row.Scope, &row.Key, &row.RequestHash, &row.CreatedAtNS,
		&row.Completed, &row.Status, &row.ContentType, &row.Location, &row.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.IdempotencyRecord{}, petstore.Errorf(petstore.CodeNotFound, "idempotency key not found")
	}
	if err != nil {
		return petstore.IdempotencyRecord{}, mapErr(ctx, "get idempotency key", err)
	}
	if row.Completed && row.Body == nil {
		row.Body = []byte{} // drivers may read an empty BLOB as NULL
	}
	return row.record(), nil
}

// PurgeIdempotencyKeys implements petstore.IdempotencyStore. On MySQL and
// MariaDB it deletes at READ COMMITTED: at REPEATABLE READ a long purge
// would lock the rows it keeps and the gaps between them, and every new
// key's insert would wait for it to end. With a deadline, should its
// link go into a black hole, the database ends the purge's transaction
// by itself soon after the deadline (runBoundTx), so the rows it
// deletes are not locked for ever.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	var opts *sql.TxOptions
	if !s.pg && s.group == nil {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	var res sql.Result
	err := s.runBoundTx(ctx, opts, func(ctx context.Context, tx bun.Tx) (err error) {
		res, err = tx.NewDelete().Model((*idemRow)(nil)).Where("created_at_ns < ?", before.UnixNano()).Exec(ctx)
		return err
	})
	if err != nil {
		return 0, mapErr(ctx, "purge idempotency keys", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(ctx, "purge idempotency keys", err)
	}
	return n, nil
}
