package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/uptrace/bun"
)

// Store implements the petstore store interfaces over a *bun.DB of any of
// the three supported dialects. It is safe for concurrent use; many
// processes may share one database.
type Store struct {
	db *bun.DB
}

var _ petstore.Store = (*Store)(nil)

// New returns a store over db, whose schema Migrate has created.
func New(db *bun.DB) *Store { return &Store{db: db} }

// DB returns the database the store uses, for callers that add their own
// tables or run Migrate.
func (s *Store) DB() *bun.DB { return s.db }

type petRow struct {
	bun.BaseModel `bun:"table:pets"`

	ID         int64  `bun:"id,pk,autoincrement"`
	Name       string `bun:"name,notnull"`
	CategoryID int64  `bun:"category_id,notnull"`
	Status     string `bun:"status,nullzero"` // NULL: the pet has no status
}

func (r petRow) pet() petstore.Pet {
	return petstore.Pet{ID: r.ID, Name: r.Name, CategoryID: r.CategoryID, Status: petstore.PetStatus(r.Status)}
}

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

// CreatePet implements petstore.PetStore.
func (s *Store) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	row := petRow{Name: p.Name, CategoryID: p.CategoryID, Status: string(p.Status)}
	// bun fills row.ID from RETURNING (SQLite, PostgreSQL) or from the
	// insert id (MySQL).
	if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		return petstore.Pet{}, mapErr(ctx, "create pet", err)
	}
	return row.pet(), nil
}

// GetPet implements petstore.PetStore.
func (s *Store) GetPet(ctx context.Context, id int64) (petstore.Pet, error) {
	var row petRow
	err := s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.Pet{}, petstore.Errorf(petstore.CodeNotFound, "pet %d not found", id)
	}
	if err != nil {
		return petstore.Pet{}, mapErr(ctx, "get pet", err)
	}
	return row.pet(), nil
}

// ListPets implements petstore.PetStore. It is a keyset query: the cost of
// a page does not grow with the number of pets before it, or after it.
func (s *Store) ListPets(ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	if q.Limit <= 0 {
		return []petstore.Pet{}, ctx.Err()
	}
	var rows []petRow
	sel := s.db.NewSelect().Model(&rows).Where("id > ?", q.AfterID)
	if q.Status != "" {
		sel = sel.Where("status = ?", string(q.Status))
	}
	if err := sel.Order("id ASC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list pets", err)
	}
	pets := make([]petstore.Pet, len(rows))
	for i, r := range rows {
		pets[i] = r.pet()
	}
	return pets, nil
}

// CreateKey implements petstore.KeyStore.
func (s *Store) CreateKey(ctx context.Context, key petstore.APIKey, hash string) error {
	row := newKeyRow(key, hash)
	if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		return mapErr(ctx, "create key", err)
	}
	return nil
}

// UpsertKey implements petstore.KeyStore. Two processes upserting the same
// hash at once both succeed: the loser of the insert race finds the
// winner's row and updates it.
func (s *Store) UpsertKey(ctx context.Context, key petstore.APIKey, hash string) (petstore.APIKey, error) {
	for attempt := 0; ; attempt++ {
		existing, _, err := s.KeyByHash(ctx, hash)
		if err == nil {
			_, err := s.db.NewUpdate().Model((*keyRow)(nil)).
				Set("plan = ?", string(key.Plan)).
				Set("per_minute = ?", key.Limits.PerMinute).
				Set("per_day = ?", key.Limits.PerDay).
				Where("hash = ?", hash).Exec(ctx)
			if err != nil {
				return petstore.APIKey{}, mapErr(ctx, "upsert key", err)
			}
			existing.Plan, existing.Limits = key.Plan, key.Limits
			return existing, nil
		}
		if petstore.ErrorCode(err) != petstore.CodeNotFound {
			return petstore.APIKey{}, err
		}
		row := newKeyRow(key, hash)
		_, err = s.db.NewInsert().Model(&row).Exec(ctx)
		if err == nil {
			return row.key(), nil
		}
		err = mapErr(ctx, "upsert key", err)
		if petstore.ErrorCode(err) != petstore.CodeConflict || attempt > 0 {
			return petstore.APIKey{}, err
		}
		// Conflict: either another process inserted this hash meanwhile
		// (the lookup now finds it) or key.ID is taken (the insert fails
		// again and its conflict is returned).
	}
}

// KeyByHash implements petstore.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (petstore.APIKey, string, error) {
	var row keyRow
	err := s.db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
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
	if err := s.db.NewSelect().Model(&rows).Order("seq ASC").Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list keys", err)
	}
	keys := make([]petstore.APIKey, len(rows))
	for i, r := range rows {
		keys[i] = r.key()
	}
	return keys, nil
}

// SetKeyPlan implements petstore.KeyStore. It reads the key back rather
// than trusting the count of updated rows, which MySQL reports as zero for
// an update that changes nothing unless the connection sets clientFoundRows.
func (s *Store) SetKeyPlan(ctx context.Context, id string, plan petstore.Plan, limits petstore.Limits) (petstore.APIKey, error) {
	_, err := s.db.NewUpdate().Model((*keyRow)(nil)).
		Set("plan = ?", string(plan)).
		Set("per_minute = ?", limits.PerMinute).
		Set("per_day = ?", limits.PerDay).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return petstore.APIKey{}, mapErr(ctx, "set key plan", err)
	}
	var row keyRow
	err = s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeNotFound, "key %s not found", id)
	}
	if err != nil {
		return petstore.APIKey{}, mapErr(ctx, "set key plan", err)
	}
	return row.key(), nil
}

// DeleteKey implements petstore.KeyStore.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	res, err := s.db.NewDelete().Model((*keyRow)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return mapErr(ctx, "delete key", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return petstore.Errorf(petstore.CodeNotFound, "key %s not found", id)
	}
	return nil
}
