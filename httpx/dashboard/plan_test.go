package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/apitest"
)

// TestDashboardSuspendedBelowPro: a project that falls below Pro keeps its
// domains, shown suspended with the reason; the edge stops serving them and
// verify and config changes answer plan_required. Back on Pro they serve
// again without a new verification.
func TestDashboardSuspendedBelowPro(t *testing.T) {
	for name, open := range apitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := apitest.NewWorld(t, open(t), time.Now)
			w.SetCNAME(t, "shop", apitest.Target)
			w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil); res.Domain(t).Status != customdomain.StatusActive {
				t.Fatalf("verify: %s", res.Body)
			}
			if got := w.Get(t, "shop.example.com", "/", "").Code; got != http.StatusOK {
				t.Fatalf("active domain: %d", got)
			}

			w.SetPlan(w.ProKey.ProjectID, petstore.PlanFree)
			if err := w.Engine.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got := w.Get(t, "shop.example.com", "/", "").Code; got != http.StatusNotFound {
				t.Fatalf("suspended domain served: %d", got)
			}
			res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil)
			d := res.Domain(t)
			if res.Status != http.StatusOK || d.Status != customdomain.StatusSuspended || d.ResumesAs != customdomain.StatusActive ||
				!strings.Contains(d.Reason, "Pro") || d.Diagnosis.NextAction != customdomain.ActionUpgradePlan {
				t.Fatalf("suspended domain: %d %s", res.Status, res.Body)
			}
			if res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains", nil); !strings.Contains(string(res.Body), `"suspended"`) {
				t.Fatalf("list: %s", res.Body)
			}
			for _, tc := range []struct {
				method, path string
				body         any
			}{
				{http.MethodPost, apitest.DashAPI + "/domains/shop.example.com/verify", nil},
				{http.MethodPut, apitest.DashAPI + "/domains/config", customdomain.Config{Primary: "shop.example.com"}},
				{http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "new.example.com"}},
			} {
				res := w.Call(t, w.Pro, tc.method, tc.path, tc.body)
				if res.Status != http.StatusForbidden || !strings.Contains(string(res.Body), petstore.CodePlanRequired) {
					t.Fatalf("%s %s: %d %s", tc.method, tc.path, res.Status, res.Body)
				}
			}

			w.SetPlan(w.ProKey.ProjectID, petstore.PlanPro)
			if err := w.Engine.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got := w.Get(t, "shop.example.com", "/", "").Code; got != http.StatusOK {
				t.Fatalf("after upgrade: %d", got)
			}
			if d := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil).Domain(t); d.Status != customdomain.StatusActive || d.ResumesAs != "" {
				t.Fatalf("after upgrade: %+v", d)
			}
		})
	}
}
