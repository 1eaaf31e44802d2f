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
	row := idemRow{Scope: rec.Scope, Key: rec.Key, RequestHash: rec.RequestHash, CreatedAtNS: rec.CreatedAt.UnixNano()}
	for attempt := 0; ; attempt++ {
		_, err := s.db.NewInsert().Model(&row).Exec(ctx)
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
	res, err := s.db.NewUpdate().Model((*idemRow)(nil)).
		Set("request_hash = ?", rec.RequestHash).
		Set("created_at_ns = ?", rec.CreatedAt.UnixNano()).
		Set("status = ?", 0).
		Set("content_type = ?", "").
		Set("location = ?", "").
		Set("body = NULL").
		Where("scope = ? AND idem_key = ? AND completed = ? AND created_at_ns < ?",
			rec.Scope, rec.Key, false, staleBefore.UnixNano()).Exec(ctx)
	if err != nil {
		return false, mapErr(ctx, "take over idempotency key", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, mapErr(ctx, "take over idempotency key", err)
	}
	return n == 1, nil
}

// CompleteIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, rec petstore.IdempotencyRecord) error {
	body := rec.Body
	if body == nil {
		body = []byte{} // a completed record's body is empty, not absent
	}
	_, err := s.db.NewUpdate().Model((*idemRow)(nil)).
		Set("completed = ?", true).
		Set("status = ?", rec.Status).
		Set("content_type = ?", rec.ContentType).
		Set("location = ?", rec.Location).
		Set("body = ?", body).
		Where("scope = ? AND idem_key = ?", rec.Scope, rec.Key).Exec(ctx)
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
	var row idemRow
	err := s.db.NewSelect().Model(&row).Where("scope = ? AND idem_key = ?", scope, key).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.IdempotencyRecord{}, petstore.Errorf(petstore.CodeNotFound, "idempotency key not found")
	}
	if err != nil {
		return petstore.IdempotencyRecord{}, mapErr(ctx, "get idempotency key", err)
	}
	return row.record(), nil
}

// ReleaseIdempotencyKey implements petstore.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	_, err := s.db.NewDelete().Model((*idemRow)(nil)).
		Where("scope = ? AND idem_key = ? AND completed = ?", scope, key, false).Exec(ctx)
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
