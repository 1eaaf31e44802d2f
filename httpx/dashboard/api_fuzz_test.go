package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// dashFuzzResponse checks what every dashboard answer must be: never a 5xx,
// a 2xx with a JSON body of the right shape, anything else an Error body
// that agrees with its status.
func dashFuzzResponse(t *testing.T, rec *httptest.ResponseRecorder, ok func(body []byte) bool) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("server error %d: %s", rec.Code, rec.Body)
	}
	if rec.Code/100 == 2 {
		if !ok(rec.Body.Bytes()) {
			t.Fatalf("%d with an unexpected body: %s", rec.Code, rec.Body)
		}
		return
	}
	var e petstore.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Status != rec.Code || httpx.StatusOf(e.Code) != rec.Code || e.Message == "" {
		t.Fatalf("%d without a matching Error body: %s", rec.Code, rec.Body)
	}
}

// FuzzDashboardAddDomain: whatever body is posted, the answer is a Domain
// with a normalised ASCII name, or an Error.
func FuzzDashboardAddDomain(f *testing.F) {
	for _, s := range []string{
		`{"name":"shop.example.com"}`, `{"name":"Bücher.example.com."}`, `{"name":"xn--bcher-kva.example.com"}`,
		`{"name":"192.0.2.1"}`, `{"name":"*.example.com"}`, `{"name":"co.uk"}`, `{"name":""}`, `{"name":null}`,
		`{"name":42}`, `{}`, `[]`, `null`, ``, `{"name":"a.example.com"} x`, `{"name":"\u0000.example.com"}`,
		`{"name":"` + strings.Repeat("a.", 130) + `com"}`,
	} {
		f.Add(s)
	}
	w := apitest.NewWorld(f, memstore.New(), testenv.NewClock(domaintest.Start).Now)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, apitest.DashAPI+"/domains", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.Pro)
		rec := httptest.NewRecorder()
		w.Dash.ServeHTTP(rec, req)
		dashFuzzResponse(t, rec, func(b []byte) bool {
			var d customdomain.Domain
			return json.Unmarshal(b, &d) == nil && d.Name != "" && d.Name == strings.ToLower(d.Name) &&
				!strings.HasSuffix(d.Name, ".") && dashIsASCII(d.Name) && len(d.Records) > 0
		})
	})
}

// FuzzDashboardConfig: whatever config is put, it is stored as given
// names of the project or refused with 400; never a 5xx.
func FuzzDashboardConfig(f *testing.F) {
	for _, s := range []string{
		`{"primary":"a.example.com","redirects":[{"from":"b.example.com","to":"a.example.com"}]}`,
		`{"primary":"","redirects":[]}`, `{"redirects":[{"from":"a.example.com","to":"b.example.com","status":308}]}`,
		`{"redirects":[{"from":"a.example.com","to":"b.example.com"},{"from":"b.example.com","to":"a.example.com"}]}`,
		`{"redirects":[null]}`, `{"redirects":{}}`, `{"primary":7}`, `{"redirects":[{"from":"a.example.com","to":"b.example.com","status":1e400}]}`,
	} {
		f.Add(s)
	}
	w := apitest.NewWorld(f, memstore.New(), testenv.NewClock(domaintest.Start).Now)
	for _, n := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		w.Call(f, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": n})
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPut, apitest.DashAPI+"/domains/config", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.Pro)
		rec := httptest.NewRecorder()
		w.Dash.ServeHTTP(rec, req)
		dashFuzzResponse(t, rec, func(b []byte) bool {
			var c customdomain.Config
			if json.Unmarshal(b, &c) != nil || c.Redirects == nil {
				return false
			}
			mine := map[string]bool{"": true, "a.example.com": true, "b.example.com": true, "c.example.com": true}
			for _, r := range c.Redirects {
				if !mine[r.From] || !mine[r.To] || r.From == "" || r.To == "" || r.Status < 301 {
					return false
				}
			}
			return mine[c.Primary]
		})
	})
}

func dashIsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
