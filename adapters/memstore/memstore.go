// Package memstore is an in-memory implementation of the petstore store
// interfaces: fast, safe for concurrent use, and gone when the process
// exits. It is the default store of tests and of petstoretest.
package memstore

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// Store keeps pets, keys, idempotency records, certificate blobs,
// custom domains, store orders, projects' deploys and webhook endpoints
// and deliveries in memory. The zero value is not
// usable; call New.
type Store struct {
	mu     sync.RWMutex
	pets   []petstore.Pet // ascending id order: ids only grow
	nextID int64

	keys     map[string]storedKey // by hash
	keyByID  map[string]string    // id -> hash
	keyOrder []string             // ids, creation order
	revoked  map[string]storedKey // revoked keys, by hash

	// Each later feature's tables have their own lock, so that domain or
	// certificate traffic never waits behind pet writes.
	dom      *domainTables
	blobs    *blobState
	idemRecs *idemTable
	orders   *orderTable

	deploysOnce sync.Once
	deploys     *deployTable

	webhooksOnce sync.Once
	webhooks     *webhookTable
}

type storedKey struct {
	key  petstore.APIKey
	hash string
}

var _ petstore.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		nextID:   1,
		keys:     map[string]storedKey{},
		keyByID:  map[string]string{},
		dom:      &domainTables{byID: map[string]customdomain.Entry{}, holder: map[string]string{}, configs: map[string]customdomain.Config{}},
		blobs:    &blobState{blobs: map[string]blob{}, locks: map[string]blobLock{}},
		idemRecs: &idemTable{recs: map[idemID]petstore.IdempotencyRecord{}, running: map[idemID]chan struct{}{}, max: MaxIdempotencyRecords},
		orders:   &orderTable{},
	}
}

// CreatePet implements petstore.PetStore.
func (s *Store) CreatePet(ctx context.Context, p petstore.NewPet) (petstore.Pet, error) {
	if err := ctx.Err(); err != nil {
		return petstore.Pet{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pet := petstore.Pet{ID: s.nextID, Name: p.Name, CategoryID: p.CategoryID, Status: p.Status}
	s.nextID++
	s.pets = append(s.pets, pet)
	if u := s.unitOf(ctx); u != nil {
		u.mu.Lock()
		u.pets = append(u.pets, pet.ID)
		u.mu.Unlock()
	}
	return pet, nil
}

// GetPet implements petstore.PetStore.
func (s *Store) GetPet(ctx context.Context, id int64) (petstore.Pet, error) {
	if err := ctx.Err(); err != nil {
		return petstore.Pet{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i, ok := s.find(id); ok {
		return s.pets[i], nil
	}
	return petstore.Pet{}, petstore.PetNotFound(id)
}

func (s *Store) find(id int64) (int, bool) {
	i := sort.Search(len(s.pets), func(i int) bool { return s.pets[i].ID >= id })
	return i, i < len(s.pets) && s.pets[i].ID == id
}

// ListPets implements petstore.PetStore.
func (s *Store) ListPets(ctx context.Context, q petstore.PetQuery) ([]petstore.Pet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		// A non-positive limit asks for nothing; without this guard a
		// negative one would panic in make below.
		return []petstore.Pet{}, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]petstore.Pet, 0, min(q.Limit, 128))
	start := sort.Search(len(s.pets), func(i int) bool { return s.pets[i].ID > q.AfterID })
	for _, p := range s.pets[start:] {
		if len(out) >= q.Limit {
			break
		}
		if q.Status == "" || p.Status == q.Status {
			out = append(out, p)
		}
	}
	return out, nil
}

// Pets returns a copy of every pet, in ascending id order.
func (s *Store) Pets() []petstore.Pet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.pets)
}

// Reset removes every pet and store order and restarts their ids at 1.
// Keys are kept.
func (s *Store) Reset() {
	s.mu.Lock()
	s.pets = nil
	s.nextID = 1
	s.mu.Unlock()
	s.orders.mu.Lock()
	s.orders.orders, s.orders.nextID = nil, 0
	s.orders.mu.Unlock()
}

// CreateKey implements petstore.KeyStore.
func (s *Store) CreateKey(ctx context.Context, key petstore.APIKey, hash string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := key.CheckStorable(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[hash]; ok {
		return petstore.Errorf(petstore.CodeConflict, "key already exists")
	}
	if _, ok := s.keyByID[key.ID]; ok {
		return petstore.Errorf(petstore.CodeConflict, "key %s already exists", key.ID)
	}
	s.keys[hash] = storedKey{key: key, hash: hash}
	s.keyByID[key.ID] = hash
	s.keyOrder = append(s.keyOrder, key.ID)
	return nil
}

// UpsertKey implements petstore.KeyStore.
func (s *Store) UpsertKey(ctx context.Context, key petstore.APIKey, hash string) (petstore.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return petstore.APIKey{}, err
	}
	if err := key.CheckStorable(); err != nil {
		return petstore.APIKey{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sk, ok := s.revoked[hash]; ok {
		return sk.key, petstore.ErrKeyRevoked
	}
	if sk, ok := s.keys[hash]; ok {
		sk.key.Plan, sk.key.Limits = key.Plan, key.Limits
		s.keys[hash] = sk
		return sk.key, nil
	}
	if _, ok := s.keyByID[key.ID]; ok {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeConflict, "key %s already exists", key.ID)
	}
	s.keys[hash] = storedKey{key: key, hash: hash}
	s.keyByID[key.ID] = hash
	s.keyOrder = append(s.keyOrder, key.ID)
	return key, nil
}

// KeyByHash implements petstore.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (petstore.APIKey, string, error) {
	if err := ctx.Err(); err != nil {
		return petstore.APIKey{}, "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sk, ok := s.keys[hash]
	if !ok {
		return petstore.APIKey{}, "", petstore.Errorf(petstore.CodeNotFound, "key not found")
	}
	return sk.key, sk.hash, nil
}

// ListKeys implements petstore.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]petstore.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]petstore.APIKey, 0, len(s.keyOrder))
	for _, id := range s.keyOrder {
		out = append(out, s.keys[s.keyByID[id]].key)
	}
	slices.SortFunc(out, func(a, b petstore.APIKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// SetKeyPlan implements petstore.KeyStore.
func (s *Store) SetKeyPlan(ctx context.Context, id string, plan petstore.Plan, limits petstore.Limits) (petstore.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return petstore.APIKey{}, err
	}
	if err := plan.CheckStorable(); err != nil { // the input first, as every store
		return petstore.APIKey{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hash, ok := s.keyByID[id]
	if !ok {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeNotFound, "key %s not found", id)
	}
	sk := s.keys[hash]
	sk.key.Plan, sk.key.Limits = plan, limits
	s.keys[hash] = sk
	return sk.key, nil
}

// DeleteKey implements petstore.KeyStore.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hash, ok := s.keyByID[id]
	if !ok {
		return petstore.Errorf(petstore.CodeNotFound, "key %s not found", id)
	}
	if s.revoked == nil {
		s.revoked = map[string]storedKey{}
	}
	s.revoked[hash] = s.keys[hash]
	delete(s.keys, hash)
	delete(s.keyByID, id)
	s.keyOrder = slices.DeleteFunc(s.keyOrder, func(k string) bool { return k == id })
	return nil
}

// RevokedKey implements petstore.KeyStore.
func (s *Store) RevokedKey(ctx context.Context, hash string) (petstore.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return petstore.APIKey{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sk, ok := s.revoked[hash]
	if !ok {
		return petstore.APIKey{}, petstore.Errorf(petstore.CodeNotFound, "no revoked key")
	}
	return sk.key, nil
}

// UnrevokeKey implements petstore.KeyStore.
func (s *Store) UnrevokeKey(ctx context.Context, id string) (petstore.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return petstore.APIKey{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for hash, sk := range s.revoked {
		if sk.key.ID != id {
			continue
		}
		if _, taken := s.keys[hash]; taken {
			return petstore.APIKey{}, petstore.Errorf(petstore.CodeConflict, "the secret of key %s was stored again", id)
		}
		if _, taken := s.keyByID[id]; taken {
			return petstore.APIKey{}, petstore.Errorf(petstore.CodeConflict, "key %s already exists", id)
		}
		delete(s.revoked, hash)
		s.keys[hash] = sk
		s.keyByID[id] = hash
		s.keyOrder = append(s.keyOrder, id)
		return sk.key, nil
	}
	return petstore.APIKey{}, petstore.Errorf(petstore.CodeNotFound, "no revoked key %s", id)
}
