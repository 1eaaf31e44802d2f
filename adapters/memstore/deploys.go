package memstore

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/petstorekit/petstore"
)

// deployTable holds each project's last successful deploy.
type deployTable struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *Store) deployTable() *deployTable {
	s.deploysOnce.Do(func() { s.deploys = &deployTable{at: map[string]time.Time{}} })
	return s.deploys
}

// RecordDeploy stores a successful deploy of projectID at at, replacing
// the project's earlier one.
func (s *Store) RecordDeploy(ctx context.Context, projectID string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if projectID == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "a deploy needs a project")
	}
	t := s.deployTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at[projectID] = at.UTC()
	return nil
}

// LastDeploys returns every project's last successful deploy; a project
// never deployed is absent. It never returns nil.
func (s *Store) LastDeploys(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.deployTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.at), nil
}

// LastDeploy returns projectID's last successful deploy, or the zero time
// when it was never deployed.
func (s *Store) LastDeploy(ctx context.Context, projectID string) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	t := s.deployTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.at[projectID], nil
}
