package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

func init() { migrations.MustRegister(upWebhookSecretRotation, downWebhookSecretRotation) }

// upWebhookSecretRotation adds to webhook_endpoints the secret a rolled
// secret replaced (previous_secret, kept as secret is, since attempts are
// signed with it too) and until when it is valid
// (previous_secret_expires_ns, Unix nanoseconds). Their defaults, the
// empty string and 0, say "none", which is right for every existing row.
// VARCHAR(255) and BIGINT, NOT NULL with a constant default, are valid in
// all three dialects. Retry-safe, as upDomainOwnership: each column is added only
// when a probe finds it missing.
func upWebhookSecretRotation(ctx context.Context, db *bun.DB) error {
	for _, c := range []struct{ name, def string }{
		{"previous_secret", "VARCHAR(255) NOT NULL DEFAULT ''"},
		{"previous_secret_expires_ns", "BIGINT NOT NULL DEFAULT 0"},
	} {
		if hasColumn(ctx, db, "webhook_endpoints", c.name) {
			continue
		}
		if err := execAll(ctx, db, "ALTER TABLE webhook_endpoints ADD COLUMN "+c.name+" "+c.def); err != nil && !hasColumn(ctx, db, "webhook_endpoints", c.name) {
			return err
		}
	}
	return nil
}

func downWebhookSecretRotation(ctx context.Context, db *bun.DB) error {
	for _, c := range []string{"previous_secret_expires_ns", "previous_secret"} {
		if !hasColumn(ctx, db, "webhook_endpoints", c) {
			continue
		}
		if err := execAll(ctx, db, "ALTER TABLE webhook_endpoints DROP COLUMN "+c); err != nil {
			return err
		}
	}
	return nil
}
