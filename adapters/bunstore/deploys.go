package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/petstorekit/petstore"
)

type deployRow struct {
	bun.BaseModel `bun:"table:deploys"`

	ProjectID  string `bun:"project_id,pk"`
	DeployedNS int64  `bun:"deployed_ns,notnull"`
}

// RecordDeploy stores a successful deploy of projectID at at, replacing
// the project's earlier one, in one upsert statement. A project id that is
// empty, longer than petstore.MaxProjectIDBytes or not petstore.Storable
// is refused with invalid_request.
func (s *Store) RecordDeploy(ctx context.Context, projectID string, at time.Time) error {
	if projectID == "" {
		return petstore.Errorf(petstore.CodeInvalidRequest, "a deploy needs a project")
	}
	if err := petstore.CheckText("deploy project id", projectID, petstore.MaxProjectIDBytes); err != nil {
		return err
	}
	row := deployRow{ProjectID: projectID, DeployedNS: at.UnixNano()}
	q := s.db.NewInsert().Model(&row)
	if s.db.Dialect().Name() == dialect.MySQL {
		q = q.On("DUPLICATE KEY UPDATE").Set("deployed_ns = VALUES(deployed_ns)")
	} else {
		q = q.On("CONFLICT (project_id) DO UPDATE").Set("deployed_ns = EXCLUDED.deployed_ns")
	}
	if _, err := q.Exec(ctx); err != nil {
		return mapErr(ctx, "record deploy", err)
	}
	return nil
}

// LastDeploys returns every project's last successful deploy, in UTC; a
// project never deployed is absent. It never returns nil.
func (s *Store) LastDeploys(ctx context.Context) (map[string]time.Time, error) {
	var rows []deployRow
	if err := s.db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return nil, mapErr(ctx, "list deploys", err)
	}
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.ProjectID] = time.Unix(0, r.DeployedNS).UTC()
	}
	return out, nil
}

// LastDeploy returns projectID's last successful deploy in UTC, or the
// zero time when it was never deployed.
func (s *Store) LastDeploy(ctx context.Context, projectID string) (time.Time, error) {
	var rows []deployRow
	if err := s.db.NewSelect().Model(&rows).Where("project_id = ?", projectID).Limit(1).Scan(ctx); err != nil {
		return time.Time{}, mapErr(ctx, "read deploy", err)
	}
	if len(rows) == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, rows[0].DeployedNS).UTC(), nil
}
