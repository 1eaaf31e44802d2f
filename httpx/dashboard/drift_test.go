package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// runDue runs w's engine's background loop at each due time up to until.
func runDue(t *testing.T, w *apitest.World, clock *testenv.Clock, until time.Time) {
	t.Helper()
	ctx := context.Background()
	for {
		due, err := w.Store.DueDomains(ctx, until, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) == 0 {
			clock.Set(until)
			return
		}
		if due[0].NextCheckAt.After(clock.Now()) {
			clock.Set(due[0].NextCheckAt)
		}
		if _, err := w.Engine.RunDue(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDashboardDrift is drift seen through the dashboard API and the edge:
// a live domain whose CNAME moves is shown misconfigured, saying where it
// points, and still served; past the grace period it is released (no
// longer served, listed with why), and DELETE dismisses it.
func TestDashboardDrift(t *testing.T) {
	for name, open := range apitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := testenv.NewClock(domaintest.Start)
			w := apitest.NewWorld(t, open(t), clock.Now)
			w.SetCNAME(t, "shop", apitest.Target)
			w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if d := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil).Domain(t); d.Status != customdomain.StatusActive {
				t.Fatalf("verify: %s", d.Status)
			}
			w.SetCNAME(t, "shop", "shops.elsewhere.example.org")
			runDue(t, w, clock, clock.Now().Add(time.Hour))
			res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil)
			d := res.Domain(t)
			if d.Status != customdomain.StatusMisconfigured || !strings.Contains(d.Reason, "points to shops.elsewhere.example.org") ||
				!strings.Contains(string(res.Body), `"driftedAt":`) || d.Diagnosis.NextAction != customdomain.ActionFixDNS {
				t.Fatalf("after the CNAME moved: %d %s", res.Status, res.Body)
			}
			if got := w.Get(t, "shop.example.com", "/", ""); got.Code != http.StatusOK {
				t.Fatalf("a misconfigured domain within its grace is not served: %d", got.Code)
			}

			runDue(t, w, clock, d.DriftedAt.Add(72*time.Hour))
			res = w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains", nil)
			if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"status":"released"`) || !strings.Contains(string(res.Body), "did not point at the platform for 72 hours") {
				t.Fatalf("list after the grace: %d %s", res.Status, res.Body)
			}
			if got := w.Get(t, "shop.example.com", "/", ""); got.Code != http.StatusNotFound {
				t.Fatalf("a released domain is served: %d", got.Code)
			}
			if res := w.Call(t, w.Pro, http.MethodDelete, apitest.DashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNoContent {
				t.Fatalf("dismiss: %d %s", res.Status, res.Body)
			}
			if res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNotFound {
				t.Fatalf("get after the dismissal: %d %s", res.Status, res.Body)
			}
		})
	}
}
