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
// known": in the rows that exist and those an earlier version still
// writes during a rolling upgrade, the first claim sets it to the row's
// due time if it was never attempted (the earlier version wrote that on
// the database's clock at the enqueue), or else to created_ns, the best
// known (enqueuedOf). No backfill or default can do better: the
// database's instant of an attempted row's enqueue is not stored
// anywhere. Nor can one keep an earlier version's claims working: they
// read webhook_deliveries whole, and bun rejects the column, so every
// replica is upgraded together (CHANGELOG.md). BIGINT NOT NULL with a
// constant default is valid in all three dialects. Retry-safe, as
// upWebhookSecretRotation.
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
