package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/customdomain"
)

// TestDomainStoredPastTheBoundsReadsWithinThem: an entry an earlier
// release stored with more status changes than customdomain.MaxHistory
// and more waiting events than MaxOutbox reads back with the newest of
// each, so the engine can still write it, now that every store refuses
// an entry past them.
func TestDomainStoredPastTheBoundsReadsWithinThem(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db := b.open(t)
			s := bunstore.New(db)
			e := customdomain.Entry{ID: "dom_a", ProjectID: "prj_a", Name: "shop.example.com", Status: customdomain.StatusActive}
			if _, err := s.CreateDomain(ctx, e); err != nil {
				t.Fatal(err)
			}
			for i := range customdomain.MaxHistory + 20 {
				e.History = append(e.History, customdomain.Transition{Status: customdomain.StatusActive, At: at.Add(time.Duration(i) * time.Minute), Reason: fmt.Sprint(i)})
			}
			for i := range customdomain.MaxOutbox + 20 {
				e.Outbox = append(e.Outbox, customdomain.PendingEvent{ID: fmt.Sprint("evt_", i), Type: customdomain.EventActive, CreatedAt: at, Domain: []byte(`{}`)})
			}
			e.OutboxDueAt = at
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.NewUpdate().Table("domains").Set("data = ?", string(data)).Where("id = ?", e.ID).Exec(ctx); err != nil {
				t.Fatal(err)
			}

			got, err := s.DomainByName(ctx, e.Name)
			if err != nil {
				t.Fatal(err)
			}
			h, o := got.History, got.Outbox
			if len(h) != customdomain.MaxHistory || h[0].Reason != "20" || len(o) != customdomain.MaxOutbox || o[0].ID != "evt_20" {
				t.Fatalf("read %d status changes (the first %+v) and %d events; want the newest %d and %d",
					len(h), h[0], len(o), customdomain.MaxHistory, customdomain.MaxOutbox)
			}
			got.Status = customdomain.StatusMisconfigured
			if _, err := s.UpdateDomain(ctx, got); err != nil {
				t.Fatalf("UpdateDomain of the entry as read: %v", err)
			}
		})
	}
}
