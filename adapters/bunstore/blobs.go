package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
)

var _ blobs.Store = (*Store)(nil)

type blobRow struct {
	bun.BaseModel `bun:"table:blobs"`

	Key        []byte `bun:"blob_key,pk"`
	Value      []byte `bun:"value,notnull"`
	Size       int64  `bun:"size,notnull"`
	ModifiedNS int64  `bun:"modified_ns,notnull"`
}

func (r blobRow) info() blobs.Info {
	return blobs.Info{Key: string(r.Key), Size: r.Size, Modified: time.Unix(0, r.ModifiedNS).UTC()}
}

type lockRow struct {
	bun.BaseModel `bun:"table:blob_locks"`

	Name      []byte `bun:"name,pk"`
	Owner     string `bun:"owner,notnull"`
	ExpiresNS int64  `bun:"expires_ns,notnull"`
}

// PutBlob implements blobs.Store with one upsert statement.
func (s *Store) PutBlob(ctx context.Context, key string, value []byte) error {
	if key == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "blob key must not be empty")
	}
	if err := petstore.CheckLength("blob key", key, petstore.MaxBlobKeyBytes); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	row := blobRow{Key: []byte(key), Value: value, Size: int64(len(value)), ModifiedNS: time.Now().UnixNano()}
	q := s.db.NewInsert().Model(&row)
	if s.db.Dialect().Name() == dialect.MySQL {
		q = q.On("DUPLICATE KEY UPDATE").
			Set("value = VALUES(value)").Set("size = VALUES(size)").Set("modified_ns = VALUES(modified_ns)")
	} else {
		q = q.On("CONFLICT (blob_key) DO UPDATE").
			Set("value = EXCLUDED.value").Set("size = EXCLUDED.size").Set("modified_ns = EXCLUDED.modified_ns")
	}
	if _, err := q.Exec(ctx); err != nil {
		return mapErr(ctx, "put blob", err)
	}
	return nil
}

// GetBlob implements blobs.Store.
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, blobs.Info, error) {
	var row blobRow
	err := s.db.NewSelect().Model(&row).Where("blob_key = ?", []byte(key)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, blobs.Info{}, &petstore.Error{Code: petstore.CodeNotFound, Message: blobs.NotFoundMessage}
	}
	if err != nil {
		return nil, blobs.Info{}, mapErr(ctx, "get blob", err)
	}
	if row.Value == nil {
		row.Value = []byte{}
	}
	return row.Value, row.info(), nil
}

// prefixEnd returns the smallest byte string greater than every string
// that starts with prefix, or nil when there is none (prefix is all 0xff).
// A range [prefix, prefixEnd) selects a prefix with no LIKE wildcards to
// escape and uses the primary key's order.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func wherePrefix(q *bun.SelectQuery, col string, prefix []byte) *bun.SelectQuery {
	if len(prefix) == 0 {
		return q
	}
	q = q.Where("? >= ?", bun.Ident(col), prefix)
	if end := prefixEnd(prefix); end != nil {
		q = q.Where("? < ?", bun.Ident(col), end)
	}
	return q
}

// DeleteBlob implements blobs.Store.
func (s *Store) DeleteBlob(ctx context.Context, key string) error {
	under := []byte(key + "/")
	q := s.db.NewDelete().Model((*blobRow)(nil)).WhereGroup(" AND ", func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("blob_key = ?", []byte(key)).
			WhereOr("blob_key >= ? AND blob_key < ?", under, prefixEnd(under))
	})
	if _, err := q.Exec(ctx); err != nil {
		return mapErr(ctx, "delete blob", err)
	}
	return nil
}

// ListBlobs implements blobs.Store.
func (s *Store) ListBlobs(ctx context.Context, prefix string) ([]blobs.Info, error) {
	var rows []blobRow
	q := s.db.NewSelect().Model(&rows).Column("blob_key", "size", "modified_ns")
	q = wherePrefix(q, "blob_key", []byte(prefix))
	if err := q.Order("blob_key ASC").Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list blobs", err)
	}
	infos := make([]blobs.Info, len(rows))
	for i, r := range rows {
		infos[i] = r.info()
	}
	return infos, nil
}

// TryLock implements blobs.Store, on the database's clock unless
// CallerClock: the lock then expires expires.Sub(now) after the
// database's now, and is stale once that is past, whatever the clocks of
// the processes sharing it. The lock row's primary key decides a race for
// a free lock; an update guarded by owner and expiry decides a refresh or
// a takeover, and reading the row back tells the caller whether it holds
// the lock now.
func (s *Store) TryLock(ctx context.Context, name, owner string, now, expires time.Time) (bool, error) {
	if name == "" || owner == "" {
		return false, petstore.Errorf(petstore.CodeInvalidRequest, "lock name and owner must not be empty")
	}
	if err := petstore.CheckLength("lock name", name, petstore.MaxBlobKeyBytes); err != nil {
		return false, err
	}
	if err := petstore.CheckText("lock owner", owner, petstore.MaxLockOwnerBytes); err != nil {
		return false, err
	}
	// Expiry is judged on the caller's times, or on the database's clock.
	expiresSQL, expiresArg := "?", expires.UnixNano()
	nowSQL, nowArgs := "?", []any{now.UnixNano()}
	if s.dbNow != "" {
		expiresSQL, expiresArg = s.dbNow+" + ?", int64(expires.Sub(now))
		nowSQL, nowArgs = s.dbNow, nil
	}
	_, err := s.db.NewInsert().Model(&lockRow{Name: []byte(name), Owner: owner}).
		Value("expires_ns", expiresSQL, expiresArg).Exec(ctx)
	if err == nil {
		return true, nil
	}
	if err = mapErr(ctx, "try lock", err); petstore.ErrorCode(err) != petstore.CodeConflict {
		return false, err
	}
	_, err = s.db.NewUpdate().Model((*lockRow)(nil)).
		Set("owner = ?", owner).Set("expires_ns = "+expiresSQL, expiresArg).
		Where("name = ?", []byte(name)).
		WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
			return q.Where("owner = ?", owner).WhereOr("expires_ns <= "+nowSQL, nowArgs...)
		}).Exec(ctx)
	if err != nil {
		return false, mapErr(ctx, "try lock", err)
	}
	var held lockRow
	err = s.db.NewSelect().Model(&held).Where("name = ?", []byte(name)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // released meanwhile; the caller tries again later
	}
	if err != nil {
		return false, mapErr(ctx, "try lock", err)
	}
	return held.Owner == owner, nil
}

// Unlock implements blobs.Store.
func (s *Store) Unlock(ctx context.Context, name, owner string) error {
	if petstore.CheckText("", owner, petstore.MaxLockOwnerBytes) != nil {
		return ctx.Err() // no lock has the owner
	}
	_, err := s.db.NewDelete().Model((*lockRow)(nil)).Where("name = ? AND owner = ?", []byte(name), owner).Exec(ctx)
	return mapErr(ctx, "unlock", err)
}
