package petstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PetService is the pets API of the spec. The local Service and the HTTP
// client both implement it, so code written against it runs against a
// local store or a remote petstore alike.
type PetService interface {
	// ListPets returns one page of pets in ascending id order.
	// Returns invalid_request for a limit outside 1..100 (0 means 20), an
	// unknown status or a malformed cursor.
	ListPets(ctx context.Context, filter PetFilter) (PetPage, error)

	// CreatePet validates and stores a new pet, returning it with its id.
	// Returns invalid_request naming the offending field.
	CreatePet(ctx context.Context, pet NewPet) (Pet, error)

	// GetPet returns the pet with the given id.
	// Returns not_found if no such pet exists (any id <= 0 included).
	GetPet(ctx context.Context, id int64) (Pet, error)
}

// PetStore persists pets. Implementations must be safe for concurrent use,
// honour context cancellation, and report an unreachable backend as
// unavailable rather than with driver text. storetest checks the first
// two; the last needs a backend made unreachable, which an adapter's own
// fault tests do (bunstore's, through internal/faultproxy).
type PetStore interface {
	// CreatePet stores a valid pet and assigns it a new, unique id greater
	// than every id assigned before. On databases with concurrent writers
	// (PostgreSQL, MySQL) ids are assigned in order but may become visible
	// out of order: a reader paging at that moment can pass an id whose
	// transaction commits just after. Keyset pages are therefore exact for
	// pets that existed when the walk started, as with any cursor API.
	CreatePet(ctx context.Context, pet NewPet) (Pet, error)

	// GetPet returns the pet with the given id, or not_found.
	GetPet(ctx context.Context, id int64) (Pet, error)

	// ListPets returns at most q.Limit pets with id > q.AfterID in
	// ascending id order, filtered by q.Status when it is set. It never
	// returns nil for an empty result, and the slice is the caller's to
	// change, whatever other calls read at the same time.
	ListPets(ctx context.Context, q PetQuery) ([]Pet, error)
}

// KeyStore persists API keys by the SHA-256 hash of their secret.
// Implementations must be safe for concurrent use.
type KeyStore interface {
	// CreateKey stores a key under the hash of its secret.
	// Returns conflict if the id or the hash is already stored.
	CreateKey(ctx context.Context, key APIKey, hash string) error

	// UpsertKey stores the key under hash, or, when hash is already
	// stored, updates that key's plan and limits and returns it with its
	// existing id, project and creation time. A hash kept as revoked
	// (RevokedKey) is not stored again: it returns the revoked key and an
	// error wrapping ErrKeyRevoked, so that a revoke landing after
	// Keys.Ensure looked for one still sticks.
	UpsertKey(ctx context.Context, key APIKey, hash string) (APIKey, error)

	// KeyByHash returns the key stored under hash and the stored hash
	// itself, or not_found. Callers compare the two in constant time.
	KeyByHash(ctx context.Context, hash string) (key APIKey, storedHash string, err error)

	// ListKeys returns every key, oldest first: by CreatedAt, then by ID
	// (a UUIDv7, in the order keys were made), a reinstated key too.
	ListKeys(ctx context.Context) ([]APIKey, error)

	// SetKeyPlan changes a key's plan and custom limits. Returns not_found,
	// or invalid_request for a plan Plan.CheckStorable refuses.
	SetKeyPlan(ctx context.Context, id string, plan Plan, limits Limits) (APIKey, error)

	// DeleteKey revokes a key: it no longer authenticates, and it is kept
	// as revoked under its hash (RevokedKey), so that the same secret is
	// not stored again by accident. Returns not_found.
	DeleteKey(ctx context.Context, id string) error

	// RevokedKey returns the revoked key stored under hash, or not_found.
	RevokedKey(ctx context.Context, hash string) (APIKey, error)

	// UnrevokeKey reinstates the revoked key id, with its id, project,
	// plan and creation time, and forgets its revocation. Returns
	// not_found if no revoked key has that id, conflict if its secret
	// was stored again meanwhile.
	UnrevokeKey(ctx context.Context, id string) (APIKey, error)
}

// Store is the storage every backend provides: pets and keys. Optional
// features have their own store interfaces, next to their consumers
// (IdempotencyStore here, customdomain.Store, adapters/acme/blobs.Store), which
// memstore and bunstore implement too.
type Store interface {
	PetStore
	KeyStore
}

// Service implements PetService over a PetStore: it validates input and
// turns pages of the store into cursors.
type Service struct {
	store         PetStore
	defaultStatus PetStatus
}

var _ PetService = (*Service)(nil)

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithDefaultStatus sets the status stored for a pet created without one.
// The spec states no default, so by default none is stored.
func WithDefaultStatus(s PetStatus) ServiceOption {
	return func(svc *Service) { svc.defaultStatus = s }
}

// NewService returns a Service over store.
func NewService(store PetStore, opts ...ServiceOption) *Service {
	s := &Service{store: store}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ListPets implements PetService.
func (s *Service) ListPets(ctx context.Context, f PetFilter) (PetPage, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 1 || limit > MaxLimit:
		return PetPage{}, Errorf(CodeInvalidRequest, "limit must be an integer from 1 to 100")
	}
	if f.Status != "" && !f.Status.Valid() {
		return PetPage{}, PetStatusError()
	}
	var after int64
	if f.Cursor != "" {
		id, err := DecodeCursor(f.Cursor)
		if err != nil {
			return PetPage{}, err
		}
		after = id
	}
	// One row more than asked tells whether a next page exists without a
	// second query.
	pets, err := s.store.ListPets(ctx, PetQuery{Status: f.Status, AfterID: after, Limit: limit + 1})
	if err != nil {
		return PetPage{}, err
	}
	page := PetPage{Pets: pets}
	if len(pets) > limit {
		page.Pets = pets[:limit]
		page.NextCursor = EncodeCursor(pets[limit-1].ID)
	}
	if page.Pets == nil {
		page.Pets = []Pet{}
	}
	return page, nil
}

// CreatePet implements PetService.
func (s *Service) CreatePet(ctx context.Context, p NewPet) (Pet, error) {
	if p.Status == "" {
		p.Status = s.defaultStatus
	}
	if err := p.Validate(); err != nil {
		return Pet{}, err
	}
	return s.store.CreatePet(ctx, p)
}

// GetPet implements PetService.
func (s *Service) GetPet(ctx context.Context, id int64) (Pet, error) {
	if id <= 0 {
		return Pet{}, PetNotFound(id)
	}
	return s.store.GetPet(ctx, id)
}

// Authenticator turns a presented bearer token into the APIKey it belongs
// to. httpx calls it on every request.
type Authenticator interface {
	// Authenticate returns the key for token, or unauthorized.
	Authenticate(ctx context.Context, token string) (APIKey, error)
}

// Keys manages API keys over a KeyStore: it creates secrets, stores only
// their hashes, and authenticates presented tokens.
type Keys struct {
	store    KeyStore
	now      func() time.Time
	onChange func(ctx context.Context, id string)
}

var _ Authenticator = (*Keys)(nil)

// KeysOption configures Keys.
type KeysOption func(*Keys)

// WithKeyChangeHook has Revoke, SetPlan, Unrevoke and Ensure call fn with
// the key's id once the change is stored, before they return. Processes
// that keep authenticated keys in memory (keycache) use it to drop their
// copy at once and to tell the other processes (changefeed). The change
// is made whatever fn does, so fn reports its own failures. Revoke,
// SetPlan and Unrevoke call fn too when the store fails without saying no
// (not not_found, conflict or invalid_request): the store may have made
// the change and lost its answer, and a cache that drops a key it need
// not costs only a lookup.
func WithKeyChangeHook(fn func(ctx context.Context, id string)) KeysOption {
	return func(k *Keys) { k.onChange = fn }
}

// NewKeys returns a key manager over store.
func NewKeys(store KeyStore, opts ...KeysOption) *Keys {
	k := &Keys{store: store, now: time.Now}
	for _, o := range opts {
		o(k)
	}
	return k
}

// changed runs the change hook, if any, for the key id.
func (k *Keys) changed(ctx context.Context, id string) {
	if k.onChange != nil {
		k.onChange(ctx, id)
	}
}

// mayHaveChanged reports whether a store call that returned err may have
// made its change all the same: unless the store said no, its answer may
// have been lost after the commit (a link cut, the caller's deadline).
func mayHaveChanged(err error) bool {
	switch ErrorCode(err) {
	case CodeNotFound, CodeConflict, CodeInvalidRequest:
		return false
	}
	return true
}

// Authenticate implements Authenticator. The store looks keys up by hash;
// the hash is compared again in constant time so that no store, whatever its
// index does, turns the lookup into a timing oracle.
func (k *Keys) Authenticate(ctx context.Context, token string) (APIKey, error) {
	if token == "" || len(token) > 512 {
		return APIKey{}, UnauthorizedError()
	}
	hash := HashAPIKey(token)
	key, stored, err := k.store.KeyByHash(ctx, hash)
	if err != nil {
		if ErrorCode(err) == CodeNotFound {
			return APIKey{}, UnauthorizedError()
		}
		return APIKey{}, err
	}
	if !HashesEqual(stored, hash) {
		return APIKey{}, UnauthorizedError()
	}
	return key, nil
}

// Create makes a new key for project on plan (limits are used for
// Enterprise), stores its hash and returns the key with its secret. The
// secret is not stored and cannot be shown again.
func (k *Keys) Create(ctx context.Context, projectID string, plan Plan, limits Limits) (APIKey, string, error) {
	secret := GenerateAPIKey()
	key := APIKey{ID: NewKeyID(), ProjectID: projectID, Plan: plan, CreatedAt: k.now().UTC().Truncate(time.Second)}
	if plan == PlanEnterprise {
		key.Limits = limits
	}
	if key.ProjectID == "" {
		key.ProjectID = NewProjectID()
	}
	if err := key.Validate(); err != nil {
		return APIKey{}, "", err
	}
	if err := k.store.CreateKey(ctx, key, HashAPIKey(secret)); err != nil {
		return APIKey{}, "", err
	}
	return key, secret, nil
}

// ErrKeyRevoked is wrapped by the error Keys.Ensure returns for a secret
// whose key was revoked: a revocation sticks, whatever configuration
// still lists the secret, until Keys.Unrevoke reinstates the key.
var ErrKeyRevoked = errors.New("key was revoked")

// Ensure stores a key whose secret the operator chose (the -keys flag),
// or updates its plan when it is stored already, and returns it. A
// secret whose key was revoked is not stored again: Ensure returns that
// key and an error wrapping ErrKeyRevoked, whose message names the key's
// id, never the secret. The secret must pass CheckSecretStrength (128
// random bits in hex or base64, or a generated key): it is stored as an
// unsalted SHA-256 (HashAPIKey), which only a secret too random to guess
// makes safe. Returns invalid_request otherwise.
//
// An error that is not the store saying no (not_found,
// conflict, invalid_request) may come after the store made the change:
// the key's id is then unknown, so the change hook is not called, and
// caches elsewhere may keep the old plan until their bound. Calling
// Ensure again with the same arguments stores nothing new and calls the
// hook: examples/server fails its start, and its next start does that.
func (k *Keys) Ensure(ctx context.Context, secret string, plan Plan, limits Limits) (APIKey, error) {
	if secret == "" {
		return APIKey{}, Errorf(CodeInvalidRequest, "key must not be empty")
	}
	if err := CheckSecretStrength(secret); err != nil {
		return APIKey{}, err
	}
	hash := HashAPIKey(secret)
	if revoked, err := k.store.RevokedKey(ctx, hash); err == nil {
		return revoked, stillRevoked(revoked)
	} else if ErrorCode(err) != CodeNotFound {
		return APIKey{}, err
	}
	key := APIKey{ID: NewKeyID(), ProjectID: NewProjectID(), Plan: plan, CreatedAt: k.now().UTC().Truncate(time.Second)}
	if plan == PlanEnterprise {
		key.Limits = limits
	}
	if err := key.Validate(); err != nil {
		return APIKey{}, err
	}
	stored, err := k.store.UpsertKey(ctx, key, hash)
	if errors.Is(err, ErrKeyRevoked) { // revoked since the look above
		return stored, stillRevoked(stored)
	}
	if err != nil {
		return APIKey{}, err
	}
	// The key may have existed on another plan.
	k.changed(ctx, stored.ID)
	return stored, nil
}

// stillRevoked is Ensure's error for a secret whose key was revoked: it
// names the key's id, never the secret.
func stillRevoked(revoked APIKey) error {
	return fmt.Errorf("%w: key %s stays revoked; `keys unrevoke %s` reinstates it", ErrKeyRevoked, revoked.ID, revoked.ID)
}

// SetPlan changes a key's plan; the new limits apply from its next request
// (with keycache: at once in this process, within its bound elsewhere).
// Returns invalid_request for an unknown plan or bad enterprise limits,
// not_found for an unknown id.
func (k *Keys) SetPlan(ctx context.Context, id string, plan Plan, limits Limits) (APIKey, error) {
	if !plan.Valid() {
		return APIKey{}, PlanError()
	}
	if plan != PlanEnterprise {
		limits = Limits{}
	} else if !limits.Valid() {
		return APIKey{}, Errorf(CodeInvalidRequest, "enterprise limits must be positive, with per day >= per minute")
	}
	key, err := k.store.SetKeyPlan(ctx, id, plan, limits)
	if err != nil {
		if mayHaveChanged(err) {
			k.changed(ctx, id)
		}
		return APIKey{}, err
	}
	k.changed(ctx, key.ID)
	return key, nil
}

// List returns every key, oldest first, without secrets.
func (k *Keys) List(ctx context.Context) ([]APIKey, error) { return k.store.ListKeys(ctx) }

// Revoke deletes a key so it no longer authenticates, and keeps it as
// revoked: Ensure does not add its secret again. Returns not_found.
func (k *Keys) Revoke(ctx context.Context, id string) error {
	if err := k.store.DeleteKey(ctx, id); err != nil {
		if mayHaveChanged(err) {
			k.changed(ctx, id)
		}
		return err
	}
	k.changed(ctx, id)
	return nil
}

// Unrevoke reinstates a revoked key with its id, project and plan: the
// explicit operator action that undoes Revoke. Returns not_found if no
// revoked key has that id, conflict if its secret was stored again.
func (k *Keys) Unrevoke(ctx context.Context, id string) (APIKey, error) {
	key, err := k.store.UnrevokeKey(ctx, id)
	if err != nil {
		if mayHaveChanged(err) {
			k.changed(ctx, id)
		}
		return APIKey{}, err
	}
	k.changed(ctx, key.ID)
	return key, nil
}
