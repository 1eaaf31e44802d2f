package bunstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/webhook"
)

// TestEndedPreviousSecretIsErased: a rolled secret is kept in the row
// for its overlap only. Once the overlap has ended on the database's
// clock, the endpoint's list leaves it out, and a purge erases it from
// webhook_endpoints, whatever the purging process's clock says (here an
// hour behind), so that it no longer sits in the database (and its
// backups) until the next roll.
func TestEndedPreviousSecretIsErased(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			s := bunstore.New(db)
			behind := func() time.Time { return time.Now().Add(-time.Hour) }
			if err := s.CreateWebhookEndpoint(ctx, webhook.Endpoint{ID: "wh_1", ProjectID: "prj_a", URL: "https://hooks.example.com/", Secret: "whsec_old", CreatedAt: behind()}); err != nil {
				t.Fatal(err)
			}
			const overlap = time.Second
			rotated, now := time.Now(), behind()
			if _, err := s.RotateWebhookSecret(ctx, "prj_a", "wh_1", "whsec_new", now, now.Add(overlap)); err != nil {
				t.Fatal(err)
			}
			stored := func() (secret string, ns int64) {
				t.Helper()
				if err := db.NewRaw("SELECT previous_secret, previous_secret_expires_ns FROM webhook_endpoints WHERE id = ?", "wh_1").Scan(ctx, &secret, &ns); err != nil {
					t.Fatal(err)
				}
				return secret, ns
			}
			if _, err := s.PurgeWebhookDeliveries(ctx, behind(), behind().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			if secret, _ := stored(); secret != "whsec_old" {
				t.Fatalf("during the overlap the row's previous secret is %q, want it kept", secret)
			}
			time.Sleep(time.Until(rotated.Add(overlap + 50*time.Millisecond)))
			// Ended, not yet erased: the list leaves it out already.
			if secret, _ := stored(); secret != "whsec_old" {
				t.Fatalf("before a purge the row's previous secret is %q, want it still there", secret)
			}
			if es, err := s.WebhookEndpoints(ctx, "prj_a"); err != nil || len(es) != 1 || es[0].Secret != "whsec_new" || es[0].PreviousSecret != "" || !es[0].PreviousSecretExpiresAt.IsZero() {
				t.Fatalf("WebhookEndpoints after the overlap = %+v, %v; want the new secret only", es, err)
			}
			if _, err := s.PurgeWebhookDeliveries(ctx, behind(), behind().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			if secret, ns := stored(); secret != "" || ns != 0 {
				t.Fatalf("after the overlap and a purge the row keeps previous secret %q until %d, want it erased", secret, ns)
			}
		})
	}
}

// TestDeliveryOfAnEarlierReplicaCountsFromItsEnqueue: a delivery
// written without enqueued_ns, as a replica of the version before it
// writes one (before the migration, or during a rolling upgrade after
// it), by a replica whose clock is two days behind the database's. Its
// first attempt fails, and it is retried: Config.RetryFor counts from
// when the database stored it (the due time that version wrote on the
// database's clock), not from its created_ns, two days earlier, which
// would give it up at once.
func TestDeliveryOfAnEarlierReplicaCountsFromItsEnqueue(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "down for a while", http.StatusInternalServerError)
			}))
			t.Cleanup(rcv.Close)
			hooks := newHooks(t, bunstore.New(db))
			ep, err := hooks.CreateEndpoint(ctx, "prj_a", rcv.URL)
			if err != nil {
				t.Fatal(err)
			}
			behind := time.Now().Add(-48 * time.Hour).UnixNano()
			if _, err := db.ExecContext(ctx, `INSERT INTO webhook_deliveries
				(event_id, endpoint_id, project_id, type, payload, created_ns, state, attempts, next_attempt_ns, lease_token, lease_until_ns, answers)
				VALUES (?, ?, 'prj_a', ?, '{}', ?, 'pending', 0, `+bunstore.DBNowSQL(db)+`, '', 0, '[]')`,
				"evt_old", ep.ID, webhook.TypeDomainActive, behind); err != nil {
				t.Fatal(err)
			}
			if n, err := hooks.DeliverDue(ctx); n != 1 || err != nil {
				t.Fatalf("DeliverDue = %d, %v; want the delivery attempted", n, err)
			}
			ds, err := hooks.Deliveries(ctx, "prj_a", ep.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("Deliveries = %+v, %v", ds, err)
			}
			if d := ds[0]; d.State != webhook.StatePending || d.Attempts != 1 {
				t.Fatalf("the delivery is %s after %d attempts, want pending after 1: it was stored just now on the database's clock, and is retried for a day", d.State, d.Attempts)
			}
		})
	}
}
