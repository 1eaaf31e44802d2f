package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

func init() { migrations.MustRegister(upWebhookEnqueuedAt, downWebhookEnqueuedAt) }

// upWebhookEnqueuedAt adds to webhook_deliveries the instant its event
// was enqueued on the database's clock (enqueued_ns, Unix nanoseconds),
// from which a claim measures a delivery's age: created_ns is on the
// clock of the process that enqueued it. Its default, 0, says "not
// known", and a claim falls back to created_ns, which is right for every
// existing row and for rows an earlier version still writes during a
// rolling upgrade. BIGINT NOT NULL with a constant default is valid in
// all three dialects. Retry-safe, as upWebhookSecretRotation.
func upWebhookEnqueuedAt(ctx context.Context, db *bun.DB) error {
	if hasColumn(ctx, db, "webhook_deliveries", "enqueued_ns") {
		return nil
	}
	if err := execAll(ctx, db, "ALTER TABLE webhook_deliveries ADD COLUMN enqueued_ns BIGINT NOT NULL DEFAULT 0"); err != nil && !hasColumn(ctx, db, "webhook_deliveries", "enqueued_ns") {
		return err
	}
	return nil
}

func downWebhookEnqueuedAt(ctx context.Context, db *bun.DB) error {
	if !hasColumn(ctx, db, "webhook_deliveries", "enqueued_ns") {
		return nil
	}
	return execAll(ctx, db, "ALTER TABLE webhook_deliveries DROP COLUMN enqueued_ns")
}
