package bunstore

import (
	"context"
	"database/sql"
	"errors"
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

// ClaimIdempotencyKey implements petstore.IdempotencyStore. The primary
// key on (scope, idem_key) decides concurrent claims, across processes too:
// one insert wins, the others conflict and read the winner's row.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord) (petstore.IdempotencyRecord, bool, error) {
	st, err := s.q.idemClaim.get(ctx, s.db.DB)
	if err != nil {
		return petstore.IdempotencyRecord{}, false, mapErr(ctx, "claim idempotency key", err)
	}
	row := idemRow{Scope: rec.Scope, Key: rec.Key, RequestHash: rec.RequestHash, CreatedAtNS: rec.CreatedAt.UnixNano()}
	for attempt := 0; ; attempt++ {
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := onTx(ctx, tx, st).ExecContext(ctx, row.Scope, row.Key, row.RequestHash, row.CreatedAtNS)
			return err
		})
		if err == nil {
			return row.record(), true, nil
		}
		if err = mapErr(ctx, "claim idempotency key", err); petstore.ErrorCode(err) != petstore.CodeConflict {
			return petstore.IdempotencyRecord{}, false, err
		}
		stored, err := s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
		// not_found: the winner released its claim between our insert and
		// this read; try to claim again, once.
		if petstore.ErrorCode(err) == petstore.CodeNotFound && attempt == 0 {
			continue
		}
		return stored, false, err
	}
}

// TakeOverIdempotencyKey implements petstore.IdempotencyStore. One
// conditional UPDATE decides concurrent takeovers: the database re-checks
// the condition on the row it locks, so after the first takeover has set
// a fresh created_at_ns the others match no row. The new created_at_ns
// always differs from the stale one, so MySQL's affected rows (changed
// rows) count it too.
func (s *Store) TakeOverIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord, staleBefore time.Time) (bool, error) {
	st, err := s.q.idemTakeOver.get(ctx, s.db.DB)
	if err != nil {
		return false, mapErr(ctx, "take over idempotency key", err)
	}
	var n int64
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := onTx(ctx, tx, st).ExecContext(ctx, rec.RequestHash, rec.CreatedAt.UnixNano(),
			rec.Scope, rec.Key, staleBefore.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, mapErr(ctx, "take over idempotency key", err)
	}
	return n == 1, nil
}

// CompleteIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord) error {
	st, err := s.q.idemComplete.get(ctx, s.db.DB)
	if err != nil {
		return mapErr(ctx, "complete idempotency key", err)
	}
	body := rec.Body
	if body == nil {
		body = []byte{} // a completed record's body is empty, not absent
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := onTx(ctx, tx, st).ExecContext(ctx, rec.Status, rec.ContentType, rec.Location, body, rec.Scope, rec.Key)
		return err
	})
	if err != nil {
		return mapErr(ctx, "complete idempotency key", err)
	}
	// Read back rather than count updated rows, which MySQL reports as
	// zero for an unchanged row without clientFoundRows.
	_, err = s.GetIdempotencyKey(ctx, rec.Scope, rec.Key)
	return err
}

// GetIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) GetIdempotencyKey(ctx context.Context, scope, key string) (petstore.IdempotencyRecord, error) {
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

// ReleaseIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	st, err := s.q.idemRelease.get(ctx, s.db.DB)
	if err != nil {
		return mapErr(ctx, "release idempotency key", err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := onTx(ctx, tx, st).ExecContext(ctx, scope, key)
		return err
	})
	return mapErr(ctx, "release idempotency key", err)
}

// PurgeIdempotencyKeys implements petstore.IdempotencyStore.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.NewDelete().Model((*idemRow)(nil)).Where("created_at_ns < ?", before.UnixNano()).Exec(ctx)
	if err != nil {
		return 0, mapErr(ctx, "purge idempotency keys", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(ctx, "purge idempotency keys", err)
	}
	return n, nil
}
