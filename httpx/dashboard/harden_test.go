package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestDashboardRefusesUnpublishableNames: confusable and special-use names
// are 400 with a message; .test and .example stay accepted.
func TestDashboardRefusesUnpublishableNames(t *testing.T) {
	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), testenv.NewClock(domaintest.Start).Now)
	for _, tc := range []struct{ name, says string }{
		{"\u0430pple.com", "scripts"},
		{"\u0430\u0440\u0440\u04cf\u0435.com", "look like Latin"},
		{"shop.onion", ".onion"},
		{"printer.local", ".local"},
		{"corp.internal", ".internal"},
	} {
		res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": tc.name})
		if res.Status != 400 || !strings.Contains(res.ErrorBody(t).Message, tc.says) {
			t.Fatalf("%s: %d %s, want 400 saying %q", tc.name, res.Status, res.Body, tc.says)
		}
	}
	for _, name := range []string{"shop.example.test", "demo.example"} {
		if res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": name}); res.Status != http.StatusCreated {
			t.Fatalf("%s: %d %s, want 201", name, res.Status, res.Body)
		}
	}
}
