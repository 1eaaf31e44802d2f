package acme

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme/blobs"
)

// Lock timing. A holder refreshes its lock every lockRefresh; a lock not
// refreshed for lockTTL is stale (its process died) and may be taken over.
// Waiters poll every lockPoll: obtaining takes seconds, so this costs
// little and needs no notification channel across processes. A store
// shared across processes judges expiry on its own clock (bunstore, on the
// database's), taking only lockTTL from Storage.now; one judging on the
// callers' clocks (bunstore.CallerClock) lets a process whose clock runs
// more than lockTTL-lockRefresh ahead of a holder's take its lock over.
const (
	lockTTL     = 30 * time.Second
	lockRefresh = 10 * time.Second
	lockPoll    = 200 * time.Millisecond
)

// Storage is a certmagic.Storage over a blobs.Store, so that every
// process sharing the store shares certificates, ACME accounts, challenge
// tokens and the locks that make them obtain one certificate per name.
type Storage struct {
	blobs    blobs.Store
	now      func() time.Time
	log      *slog.Logger
	instance string        // random per Storage: lock owners are instance/sequence
	seq      atomic.Uint64 // so that two Lock calls in one process exclude each other too
	// keep, when set, is asked before a file of a name's certificate is
	// stored; its error refuses the file (see Issuer.storing).
	keep func(ctx context.Context, name string) error

	mu   sync.Mutex
	held map[string]heldLock // by lock name
}

type heldLock struct {
	owner string
	stop  chan struct{} // closed by Unlock to end the refresher
}

var _ certmagic.Storage = (*Storage)(nil)

// NewStorage returns a certmagic.Storage over blobs. now is the clock of
// the times passed to blobs.Store.TryLock (time.Now when nil); a store
// that judges lock expiry on its own clock uses only their difference.
func NewStorage(blobs blobs.Store, now func() time.Time, log *slog.Logger) *Storage {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	rand.Read(b[:])
	return &Storage{blobs: blobs, now: now, log: log, instance: hex.EncodeToString(b[:]), held: map[string]heldLock{}}
}

func notExist(err error) error {
	if petstore.ErrorCode(err) == petstore.CodeNotFound {
		return fs.ErrNotExist
	}
	return err
}

// Store implements certmagic.Storage.
func (s *Storage) Store(ctx context.Context, key string, value []byte) error {
	if name, ok := certName(key); ok && s.keep != nil {
		if err := s.keep(ctx, name); err != nil {
			return err
		}
	}
	return s.blobs.PutBlob(ctx, key, value)
}

// certName returns the name whose certificate key is a file of
// (certificates/<issuer>/<name>/<name>.crt, .key or .json, with a
// wildcard's "*" spelled "wildcard_"), and whether it is one.
func certName(key string) (string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 4 || parts[0] != certmagic.StorageKeys.CertsPrefix("") || !strings.HasPrefix(parts[3], parts[2]+".") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(parts[2], "wildcard_."); ok {
		return "*." + rest, true
	}
	return parts[2], true
}

// Load implements certmagic.Storage; a missing key is fs.ErrNotExist.
func (s *Storage) Load(ctx context.Context, key string) ([]byte, error) {
	v, _, err := s.blobs.GetBlob(ctx, key)
	return v, notExist(err)
}

// Delete implements certmagic.Storage: key and everything under it.
func (s *Storage) Delete(ctx context.Context, key string) error {
	return s.blobs.DeleteBlob(ctx, key)
}

// Exists implements certmagic.Storage: key is a file or a directory.
func (s *Storage) Exists(ctx context.Context, key string) bool {
	_, err := s.Stat(ctx, key)
	return err == nil
}

// Stat implements certmagic.Storage.
func (s *Storage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	_, info, err := s.blobs.GetBlob(ctx, key)
	if err == nil {
		return certmagic.KeyInfo{Key: key, Modified: info.Modified, Size: info.Size, IsTerminal: true}, nil
	}
	if petstore.ErrorCode(err) != petstore.CodeNotFound {
		return certmagic.KeyInfo{}, err
	}
	under, err := s.blobs.ListBlobs(ctx, key+"/")
	if err != nil {
		return certmagic.KeyInfo{}, err
	}
	if len(under) == 0 {
		return certmagic.KeyInfo{}, fs.ErrNotExist
	}
	return certmagic.KeyInfo{Key: key, IsTerminal: false}, nil
}

// List implements certmagic.Storage. Directories are implicit: a key
// a/b/c makes a and a/b directories. Non-recursive lists the direct
// children of path; recursive lists every file and directory below it.
func (s *Storage) List(ctx context.Context, path string, recursive bool) ([]string, error) {
	prefix := ""
	if path != "" {
		prefix = strings.TrimSuffix(path, "/") + "/"
	}
	infos, err := s.blobs.ListBlobs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fs.ErrNotExist
	}
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, info := range infos {
		rel := strings.TrimPrefix(info.Key, prefix)
		parts := strings.Split(rel, "/")
		if !recursive {
			add(prefix + parts[0])
			continue
		}
		for i := range parts {
			add(prefix + strings.Join(parts[:i+1], "/"))
		}
	}
	return out, nil
}

// Lock implements certmagic.Locker: it blocks until it holds name or ctx
// is done. While held, the lock is refreshed in the background so that a
// long obtain keeps it, and a crashed holder's lock goes stale after 30
// seconds.
func (s *Storage) Lock(ctx context.Context, name string) error {
	owner := s.instance + "/" + strconv.FormatUint(s.seq.Add(1), 10)
	for {
		now := s.now()
		ok, err := s.blobs.TryLock(ctx, name, owner, now, now.Add(lockTTL))
		if err != nil {
			return err
		}
		if ok {
			break
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	stop := make(chan struct{})
	s.mu.Lock()
	s.held[name] = heldLock{owner: owner, stop: stop}
	s.mu.Unlock()
	go s.refresh(name, owner, stop)
	return nil
}

func (s *Storage) refresh(name, owner string, stop chan struct{}) {
	t := time.NewTicker(lockRefresh)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			now := s.now()
			ctx, cancel := context.WithTimeout(context.Background(), lockRefresh)
			ok, err := s.blobs.TryLock(ctx, name, owner, now, now.Add(lockTTL))
			cancel()
			if err != nil || !ok {
				s.log.Warn("could not refresh storage lock", "lock", name, "taken_over", !ok, "err", err)
			}
		}
	}
}

// Unlock implements certmagic.Locker.
func (s *Storage) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	h, ok := s.held[name]
	delete(s.held, name)
	s.mu.Unlock()
	if !ok {
		return errors.New("unlock of a storage lock this process does not hold: " + name)
	}
	close(h.stop)
	return s.blobs.Unlock(ctx, name, h.owner)
}
