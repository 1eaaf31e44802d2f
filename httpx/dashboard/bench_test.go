package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// BenchmarkDashboardList measures GET /dashboard/api/domains with ten
// domains: authentication, the engine's List and Config, and encoding.
func BenchmarkDashboardList(b *testing.B) {
	w := apitest.NewWorld(b, memstore.New(), testenv.NewClock(domaintest.Start).Now)
	for _, l := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		w.Call(b, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": l + ".example.com"})
	}
	req := httptest.NewRequest(http.MethodGet, apitest.DashAPI+"/domains", nil)
	req.Header.Set("Authorization", "Bearer "+w.Pro)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		w.Dash.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
