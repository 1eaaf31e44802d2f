package memstore

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
)

var _ blobs.Store = (*Store)(nil)

// blobState is the blobs.Store half of a Store.
type blobState struct {
	mu    sync.Mutex
	blobs map[string]blob
	locks map[string]blobLock
}

type blob struct {
	value    []byte
	modified time.Time
}

type blobLock struct {
	owner   string
	expires time.Time
}

// PutBlob implements blobs.Store.
func (s *Store) PutBlob(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "blob key must not be empty")
	}
	if err := petstore.CheckLength("blob key", key, petstore.MaxBlobKeyBytes); err != nil {
		return err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	// Copy so that a caller reusing its slice cannot change what is stored.
	st.blobs[key] = blob{value: append([]byte{}, value...), modified: time.Now()}
	return nil
}

// GetBlob implements blobs.Store.
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, blobs.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, blobs.Info{}, err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	b, ok := st.blobs[key]
	if !ok {
		return nil, blobs.Info{}, &petstore.Error{Code: petstore.CodeNotFound, Message: blobs.NotFoundMessage}
	}
	return slices.Clone(b.value), blobs.Info{Key: key, Size: int64(len(b.value)), Modified: b.modified}, nil
}

// DeleteBlob implements blobs.Store.
func (s *Store) DeleteBlob(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.blobs, key)
	for k := range st.blobs {
		if strings.HasPrefix(k, key+"/") {
			delete(st.blobs, k)
		}
	}
	return nil
}

// ListBlobs implements blobs.Store.
func (s *Store) ListBlobs(ctx context.Context, prefix string) ([]blobs.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []blobs.Info{}
	for k, b := range st.blobs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, blobs.Info{Key: k, Size: int64(len(b.value)), Modified: b.modified})
		}
	}
	slices.SortFunc(out, func(a, b blobs.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// TryLock implements blobs.Store.
func (s *Store) TryLock(ctx context.Context, name, owner string, now, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if name == "" || owner == "" {
		return false, petstore.Errorf(petstore.CodeInvalidRequest, "lock name and owner must not be empty")
	}
	if err := petstore.CheckLength("lock name", name, petstore.MaxBlobKeyBytes); err != nil {
		return false, err
	}
	if err := petstore.CheckText("lock owner", owner, petstore.MaxLockOwnerBytes); err != nil {
		return false, err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	if l, ok := st.locks[name]; ok && l.owner != owner && l.expires.After(now) {
		return false, nil
	}
	st.locks[name] = blobLock{owner: owner, expires: expires}
	return true, nil
}

// Unlock implements blobs.Store.
func (s *Store) Unlock(ctx context.Context, name, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st := s.blobs
	st.mu.Lock()
	defer st.mu.Unlock()
	if l, ok := st.locks[name]; ok && l.owner == owner {
		delete(st.locks, name)
	}
	return nil
}
