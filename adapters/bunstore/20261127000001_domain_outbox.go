package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

func init() { migrations.MustRegister(upDomainOutbox, downDomainOutbox) }

// upDomainOutbox adds domains.outbox_due_ns, when the events stored in an
// entry's outbox (customdomain.Entry.Outbox, in the entry's JSON) are next
// handed over by the background loop, NULL when it has none (right for
// every existing row), and the index DueOutboxes reads it by, so the loop
// never reads entries without due events. BIGINT NULL is a valid type in
// all three dialects. Retry-safe, as upDomainOwnership.
func upDomainOutbox(ctx context.Context, db *bun.DB) error {
	if !hasColumn(ctx, db, "domains", "outbox_due_ns") {
		if err := execAll(ctx, db, "ALTER TABLE domains ADD COLUMN outbox_due_ns BIGINT NULL"); err != nil && !hasColumn(ctx, db, "domains", "outbox_due_ns") {
			return err
		}
	}
	return createIndex(ctx, db, "domains_outbox_due", "domains", false, "outbox_due_ns")
}

func downDomainOutbox(ctx context.Context, db *bun.DB) error {
	if err := dropIndex(ctx, db, "domains_outbox_due", "domains"); err != nil {
		return err
	}
	if !hasColumn(ctx, db, "domains", "outbox_due_ns") {
		return nil
	}
	return execAll(ctx, db, "ALTER TABLE domains DROP COLUMN outbox_due_ns")
}
