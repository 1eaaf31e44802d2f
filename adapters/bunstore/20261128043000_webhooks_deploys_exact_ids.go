package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upWebhooksDeploysExactIDs, downWebhooksDeploysExactIDs) }

// upWebhooksDeploysExactIDs makes MySQL and MariaDB compare webhook
// endpoint, event and project ids, and deploys' project ids, exactly, as
// upDomainsExactNames does for the domains. Their utf8mb4_bin collation
// pads with spaces, so "prj_a " matched prj_a: it listed prj_a's
// endpoints and deliveries, fanned its events out to prj_a's endpoints,
// and replaced and read prj_a's last deploy. VARBINARY compares bytes,
// without padding, and sorts as utf8mb4_bin did (bytewise); 64 and 255
// bytes are what the store accepts (petstore.MaxWebhookIDBytes,
// MaxProjectIDBytes). PostgreSQL ("C" collation) and SQLite already
// compare exactly. MODIFY keeps the keys and indexes and may be run
// again, so the migration is retry-safe.
func upWebhooksDeploysExactIDs(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.MySQL {
		return nil
	}
	return execAll(ctx, db,
		`ALTER TABLE webhook_endpoints
			MODIFY id VARBINARY(64) NOT NULL,
			MODIFY project_id VARBINARY(255) NOT NULL`,
		`ALTER TABLE webhook_deliveries
			MODIFY event_id VARBINARY(64) NOT NULL,
			MODIFY endpoint_id VARBINARY(64) NOT NULL,
			MODIFY project_id VARBINARY(255) NOT NULL`,
		`ALTER TABLE deploys MODIFY project_id VARBINARY(255) NOT NULL`)
}

func downWebhooksDeploysExactIDs(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.MySQL {
		return nil
	}
	return execAll(ctx, db,
		`ALTER TABLE webhook_endpoints
			MODIFY id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY project_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
		`ALTER TABLE webhook_deliveries
			MODIFY event_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY endpoint_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY project_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
		`ALTER TABLE deploys MODIFY project_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`)
}
