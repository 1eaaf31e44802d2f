package httpx_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
)

// TestDashboardSuspendedBelowPro: a project that falls below Pro keeps its
// domains, shown suspended with the reason; the edge stops serving them and
// verify and config changes answer plan_required. Back on Pro they serve
// again without a new verification.
func TestDashboardSuspendedBelowPro(t *testing.T) {
	for name, open := range dashStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := newDashWorld(t, open(t), time.Now)
			w.setCNAME(t, "shop", dashTarget)
			w.call(t, w.pro, http.MethodPost, dashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if res := w.call(t, w.pro, http.MethodPost, dashAPI+"/domains/shop.example.com/verify", nil); res.domain(t).Status != customdomain.StatusActive {
				t.Fatalf("verify: %s", res.Body)
			}
			if got := w.get(t, "shop.example.com", "/", "").Code; got != http.StatusOK {
				t.Fatalf("active domain: %d", got)
			}

			w.setPlan(w.proKey.ProjectID, petstore.PlanFree)
			if err := w.engine.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got := w.get(t, "shop.example.com", "/", "").Code; got != http.StatusNotFound {
				t.Fatalf("suspended domain served: %d", got)
			}
			res := w.call(t, w.pro, http.MethodGet, dashAPI+"/domains/shop.example.com", nil)
			d := res.domain(t)
			if res.Status != http.StatusOK || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusActive ||
				!strings.Contains(d.Reason, "Pro") || d.Diagnosis.NextAction != customdomain.ActionUpgradePlan {
				t.Fatalf("suspended domain: %d %s", res.Status, res.Body)
			}
			if res := w.call(t, w.pro, http.MethodGet, dashAPI+"/domains", nil); !strings.Contains(string(res.Body), `"suspended"`) {
				t.Fatalf("list: %s", res.Body)
			}
			for _, tc := range []struct {
				method, path string
				body         any
			}{
				{http.MethodPost, dashAPI + "/domains/shop.example.com/verify", nil},
				{http.MethodPut, dashAPI + "/domains/config", customdomain.Config{Primary: "shop.example.com"}},
				{http.MethodPost, dashAPI + "/domains", map[string]string{"name": "new.example.com"}},
			} {
				res := w.call(t, w.pro, tc.method, tc.path, tc.body)
				if res.Status != http.StatusForbidden || !strings.Contains(string(res.Body), petstore.CodePlanRequired) {
					t.Fatalf("%s %s: %d %s", tc.method, tc.path, res.Status, res.Body)
				}
			}

			w.setPlan(w.proKey.ProjectID, petstore.PlanPro)
			if err := w.engine.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got := w.get(t, "shop.example.com", "/", "").Code; got != http.StatusOK {
				t.Fatalf("after upgrade: %d", got)
			}
			if d := w.call(t, w.pro, http.MethodGet, dashAPI+"/domains/shop.example.com", nil).domain(t); d.Status != customdomain.StatusActive || d.ResumesAs != "" {
				t.Fatalf("after upgrade: %+v", d)
			}
		})
	}
}
