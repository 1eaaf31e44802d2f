package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

func init() { migrations.MustRegister(upDomainsExactNames, downDomainsExactNames) }

// upDomainsExactNames makes MySQL and MariaDB compare domain ids, names
// and project ids exactly. Their utf8mb4_bin collation pads with spaces,
// so "prj_a " matched prj_a: it listed prj_a's domains, read and replaced
// prj_a's config, and "shop.example.com " collided with
// shop.example.com's hold. VARBINARY compares bytes, without padding,
// and sorts as utf8mb4_bin did (bytewise); 255 bytes is what the store
// accepts (petstore.MaxDomainNameBytes, MaxProjectIDBytes). PostgreSQL
// ("C" collation) and SQLite already compare exactly. MODIFY keeps the
// keys and indexes and may be run again, so the migration is retry-safe.
func upDomainsExactNames(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.MySQL {
		return nil
	}
	return execAll(ctx, db,
		`ALTER TABLE domains
			MODIFY id VARBINARY(64) NOT NULL,
			MODIFY project_id VARBINARY(255) NOT NULL,
			MODIFY name VARBINARY(255) NOT NULL,
			MODIFY held_name VARBINARY(255) NULL`,
		`ALTER TABLE domain_configs MODIFY project_id VARBINARY(255) NOT NULL`)
}

func downDomainsExactNames(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.MySQL {
		return nil
	}
	return execAll(ctx, db,
		`ALTER TABLE domains
			MODIFY id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY project_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			MODIFY held_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL`,
		`ALTER TABLE domain_configs MODIFY project_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`)
}
