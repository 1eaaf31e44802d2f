package httpx_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/testenv"
)

// runDue runs the engine's background loop at each due time up to until.
func (w *dashWorld) runDue(t *testing.T, clock *testenv.Clock, until time.Time) {
	t.Helper()
	ctx := context.Background()
	for {
		due, err := w.store.DueDomains(ctx, until, 1)
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
		if _, err := w.engine.RunDue(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDashboardDrift is drift seen through the dashboard API and the edge:
// a live domain whose CNAME moves is shown misconfigured, saying where it
// points, and still served; past the grace period it is released (no
// longer served, listed with why), and DELETE dismisses it.
func TestDashboardDrift(t *testing.T) {
	for name, open := range dashStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			w := newDashWorld(t, open(t), clock.Now)
			w.setCNAME(t, "shop", dashTarget)
			w.call(t, w.pro, http.MethodPost, dashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if d := w.call(t, w.pro, http.MethodPost, dashAPI+"/domains/shop.example.com/verify", nil).domain(t); d.Status != customdomain.StatusActive {
				t.Fatalf("verify: %s", d.Status)
			}
			w.setCNAME(t, "shop", "shops.elsewhere.example.org")
			w.runDue(t, clock, clock.Now().Add(time.Hour))
			res := w.call(t, w.pro, http.MethodGet, dashAPI+"/domains/shop.example.com", nil)
			d := res.domain(t)
			if d.Status != customdomain.StatusMisconfigured || !strings.Contains(d.Reason, "points to shops.elsewhere.example.org") ||
				!strings.Contains(string(res.Body), `"driftedAt":`) || d.Diagnosis.NextAction != customdomain.ActionFixDNS {
				t.Fatalf("after the CNAME moved: %d %s", res.Status, res.Body)
			}
			if got := w.get(t, "shop.example.com", "/", ""); got.Code != http.StatusOK {
				t.Fatalf("a misconfigured domain within its grace is not served: %d", got.Code)
			}

			w.runDue(t, clock, d.DriftedAt.Add(72*time.Hour))
			res = w.call(t, w.pro, http.MethodGet, dashAPI+"/domains", nil)
			if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"status":"released"`) || !strings.Contains(string(res.Body), "did not point at the platform for 72 hours") {
				t.Fatalf("list after the grace: %d %s", res.Status, res.Body)
			}
			if got := w.get(t, "shop.example.com", "/", ""); got.Code != http.StatusNotFound {
				t.Fatalf("a released domain is served: %d", got.Code)
			}
			if res := w.call(t, w.pro, http.MethodDelete, dashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNoContent {
				t.Fatalf("dismiss: %d %s", res.Status, res.Body)
			}
			if res := w.call(t, w.pro, http.MethodGet, dashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNotFound {
				t.Fatalf("get after the dismissal: %d %s", res.Status, res.Body)
			}
		})
	}
}
