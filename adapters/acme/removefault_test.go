package acme_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/acme"
	"github.com/petstorekit/petstore/adapters/bunstore"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/faultproxy"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestCertRemovalThroughADatabaseFault: the certificate storage is the
// database (as with examples/server's -acme-ca), and its link is cut or
// paused as a domain is removed. The removal stands, with its
// certificate's removal pending in the stored entry, and another process,
// started on the same database once the link is back, removes the
// certificate's files from its background loop. Before, only
// the removing process remembered to, so a restart left them for good.
func TestCertRemovalThroughADatabaseFault(t *testing.T) {
	for _, fault := range []struct {
		name  string
		apply func(*faultproxy.Proxy)
	}{{"cut", (*faultproxy.Proxy).Cut}, {"paused", (*faultproxy.Proxy).Pause}} {
		t.Run(fault.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := testenv.PostgresSchema(t)
			proxy, through := faultproxy.StartFor(t, dsn)
			open := func(dsn string) *bunstore.Store {
				db, err := bunopen.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				return bunstore.New(db)
			}
			domains := open(dsn)
			if err := bunstore.Migrate(ctx, domains.DB()); err != nil {
				t.Fatal(err)
			}
			certs := open(through)                     // the issuer's storage, over the link the fault strikes
			const ca = "https://127.0.0.1:1/directory" // never asked: nothing is obtained here
			issuer := func() *acme.Issuer {
				is, err := acme.New(acme.Config{CA: ca, Storage: certs, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = is.Close() })
				return is
			}
			w := domaintest.New(t, domaintest.Options{
				Store:      domains,
				Projects:   domaintest.NewProjects(customdomain.Project{ID: project, Plan: petstore.PlanPro, Deployed: true}),
				CertIssuer: issuer(),
			})
			if _, _, err := w.Engine.Add(ctx, project, "shop.example.com"); err != nil {
				t.Fatal(err)
			}
			site := certmagic.StorageKeys.CertsSitePrefix((&certmagic.ACMEIssuer{CA: ca}).IssuerKey(), "shop.example.com")
			if err := certs.PutBlob(ctx, site+"/shop.example.com.crt", []byte("certificate")); err != nil {
				t.Fatal(err)
			}

			fault.apply(proxy)
			removeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := w.Engine.Remove(removeCtx, project, "shop.example.com")
			cancel()
			if err != nil {
				t.Fatalf("Remove with the certificate storage unreachable = %v, want nil: the domain is removed", err)
			}
			proxy.Restore()
			// The fault failed the removal; a paused link may still deliver
			// its DELETE once restored, so only the record says so.
			if !removed(t, domains).CertRemovalPending {
				t.Fatal("the removed domain's certificate removal is not pending after the fault")
			}

			// The removing process is gone; another starts on the database.
			other := w.Replica(t, func(c *customdomain.EngineConfig) { c.CertIssuer = issuer() })
			if _, err := other.RunDue(ctx, w.Clock.Advance(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if files, err := certs.ListBlobs(ctx, site); err != nil || len(files) != 0 {
				t.Fatalf("the certificate's files once another process ran: %d (%v), want none", len(files), err)
			}
			if removed(t, domains).CertRemovalPending {
				t.Fatal("the certificate's removal is still pending once another process removed it")
			}
		})
	}
}

// removed returns the removed entry of shop.example.com in store.
func removed(t *testing.T, store customdomain.Store) customdomain.Entry {
	t.Helper()
	ens, err := store.ListDomains(context.Background(), customdomain.DomainQuery{ProjectID: project, Name: "shop.example.com", Status: customdomain.StatusRemoved})
	if err != nil || len(ens) != 1 {
		t.Fatalf("removed entries of shop.example.com: %d (%v), want 1", len(ens), err)
	}
	return ens[0]
}
