package edge_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx/edge"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// FuzzEdgeHost: whatever Host a client sends, the edge never answers with a
// 5xx, and only a Host that names the active domain gets its project's
// content.
func FuzzEdgeHost(f *testing.F) {
	for _, s := range []string{
		"shop.example.com", "SHOP.example.com.:80", "shop.example.com:99999", "shop.example.com.evil.example",
		"x.shop.example.com", "[::1]", "127.0.0.1", "localhost", "", ":", "ｓhop.example.com", "shop.example.com\x00",
		"[shop.example.com]", "shop..example.com",
	} {
		f.Add(s)
	}
	w := apitest.NewWorld(f, memstore.New(), testenv.NewClock(domaintest.Start).Now)
	w.Activate(f, w.Pro, "shop")
	project := w.ProKey.ProjectID
	f.Fuzz(func(t *testing.T, host string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		w.Edge.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("Host %q: %d %s", host, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), project) {
			h := edge.RequestHost(req)
			n, err := customdomain.ParseName(h)
			if h != "shop.example.com" && (err != nil || n.ASCII != "shop.example.com") {
				t.Fatalf("Host %q (%q) got the project's site", host, h)
			}
		}
	})
}
