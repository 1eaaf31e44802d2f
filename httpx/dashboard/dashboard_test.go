package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestDashboardDomainLifecycle walks one domain through what a customer
// does in the dashboard: add it, read the instructions, verify before and
// after fixing DNS, see it live on the edge, configure a redirect, remove
// it and see traffic stop at once.
func TestDashboardDomainLifecycle(t *testing.T) {
	for name, open := range apitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := apitest.NewWorld(t, open(t), testenv.NewClock(domaintest.Start).Now)

			res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains", nil)
			if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"domains":[]`) {
				t.Fatalf("empty list: %d %s", res.Status, res.Body)
			}

			res = w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "Shop.Example.com."})
			if res.Status != http.StatusCreated {
				t.Fatalf("add: %d %s", res.Status, res.Body)
			}
			if got, want := res.Header.Get("Location"), apitest.DashAPI+"/domains/shop.example.com"; got != want {
				t.Fatalf("Location = %q, want %q", got, want)
			}
			d := res.Domain(t)
			if d.Name != "shop.example.com" || d.Status != customdomain.StatusPending || d.Kind != customdomain.KindSubdomain {
				t.Fatalf("added domain = %+v", d)
			}
			want := customdomain.Record{Type: "CNAME", Name: "shop", Value: apitest.Target, TTL: 3600}
			if len(d.Records) != 2 || d.Records[0] != want || d.Records[1].Name != "_petstore-challenge.shop" || !d.Records[1].Optional {
				t.Fatalf("records = %+v, want [%+v] and the optional ownership TXT record", d.Records, want)
			}

			res = w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if res.Status != http.StatusOK || res.Domain(t).Name != "shop.example.com" {
				t.Fatalf("add again: %d %s", res.Status, res.Body)
			}

			verify := func(wantStatus customdomain.Status, wantFinding string) customdomain.Domain {
				t.Helper()
				res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil)
				if res.Status != http.StatusOK {
					t.Fatalf("verify: %d %s", res.Status, res.Body)
				}
				d := res.Domain(t)
				if d.Status != wantStatus {
					t.Fatalf("status after verify = %s, want %s (%s)", d.Status, wantStatus, res.Body)
				}
				codes := []string{}
				for _, f := range d.Diagnosis.Findings {
					codes = append(codes, f.Code)
				}
				if wantFinding != "" && !slices.Contains(codes, wantFinding) {
					t.Fatalf("findings = %v, want %s", codes, wantFinding)
				}
				return d
			}
			verify(customdomain.StatusPending, customdomain.FindingNoRecords)
			if got := w.Get(t, "shop.example.com", "/", "").Code; got != http.StatusNotFound {
				t.Fatalf("pending domain served: %d", got)
			}

			w.SetCNAME(t, "shop", "elsewhere.example.net")
			d = verify(customdomain.StatusPending, customdomain.FindingCNAMEMismatch)
			if d.Diagnosis.NextAction != customdomain.ActionFixDNS || d.Diagnosis.Observed.CNAME != "elsewhere.example.net" {
				t.Fatalf("diagnosis = %+v", d.Diagnosis)
			}

			w.SetCNAME(t, "shop", apitest.Target)
			verify(customdomain.StatusActive, "")
			page := w.Get(t, "shop.example.com", "/", "")
			if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), w.ProKey.ProjectID) {
				t.Fatalf("live domain: %d %s", page.Code, page.Body)
			}

			res = w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil)
			if d := res.Domain(t); res.Status != http.StatusOK || len(d.History) < 2 || d.History[0].Status != customdomain.StatusPending {
				t.Fatalf("get: %d %s", res.Status, res.Body)
			}

			// A second domain redirecting to the first.
			w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "www.example.com"})
			w.SetCNAME(t, "www", apitest.Target)
			w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains/www.example.com/verify", nil)
			cfg := customdomain.Config{Primary: "shop.example.com", Redirects: []customdomain.Redirect{{From: "www.example.com", To: "shop.example.com"}}}
			res = w.Call(t, w.Pro, http.MethodPut, apitest.DashAPI+"/domains/config", cfg)
			if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"status":301`) {
				t.Fatalf("put config: %d %s", res.Status, res.Body)
			}
			res = w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/config", nil)
			var got customdomain.Config
			if err := json.Unmarshal(res.Body, &got); err != nil || got.Primary != "shop.example.com" || len(got.Redirects) != 1 {
				t.Fatalf("get config: %d %s", res.Status, res.Body)
			}
			rd := w.Get(t, "www.example.com", "/pets?x=1", "")
			if rd.Code != http.StatusMovedPermanently || rd.Header().Get("Location") != "http://shop.example.com/pets?x=1" {
				t.Fatalf("redirect: %d %q", rd.Code, rd.Header().Get("Location"))
			}

			res = w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains", nil)
			var list struct {
				Domains []customdomain.Domain `json:"domains"`
				Config  customdomain.Config   `json:"config"`
			}
			if err := json.Unmarshal(res.Body, &list); err != nil || len(list.Domains) != 2 || list.Config.Primary != "shop.example.com" {
				t.Fatalf("list: %d %s", res.Status, res.Body)
			}

			res = w.Call(t, w.Pro, http.MethodDelete, apitest.DashAPI+"/domains/shop.example.com", nil)
			if res.Status != http.StatusNoContent || len(res.Body) != 0 {
				t.Fatalf("remove: %d %s", res.Status, res.Body)
			}
			// Traffic stopped before the response: no refresh, no wait.
			if got := w.Get(t, "shop.example.com", "/", ""); got.Code != http.StatusNotFound {
				t.Fatalf("removed domain still served: %d %s", got.Code, got.Body)
			}
			if got := w.Get(t, "www.example.com", "/", ""); got.Code != http.StatusOK && got.Code != http.StatusNotFound {
				t.Fatalf("redirect to a removed domain: %d", got.Code)
			} else if got.Header().Get("Location") != "" {
				t.Fatalf("redirect to a removed domain still answered: %q", got.Header().Get("Location"))
			}
			res = w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/config", nil)
			if strings.Contains(string(res.Body), "shop.example.com") {
				t.Fatalf("config still mentions the removed domain: %s", res.Body)
			}
			if res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNotFound {
				t.Fatalf("get removed: %d", res.Status)
			}
		})
	}
}

// TestDashboardUnicodeNames: {name} is accepted in either form and both
// forms come back.
func TestDashboardUnicodeNames(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), testenv.NewClock(domaintest.Start).Now)
	res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "Bücher.example.com"})
	d := res.Domain(t)
	if res.Status != http.StatusCreated || d.Name != "xn--bcher-kva.example.com" || d.UnicodeName != "bücher.example.com" {
		t.Fatalf("add: %d %s", res.Status, res.Body)
	}
	for _, path := range []string{
		apitest.DashAPI + "/domains/xn--bcher-kva.example.com",
		apitest.DashAPI + "/domains/b%C3%BCcher.example.com",
		apitest.DashAPI + "/domains/B%C3%9Ccher.Example.com",
	} {
		t.Run(path, func(t *testing.T) {
			res := w.Call(t, w.Pro, http.MethodGet, path, nil)
			if res.Status != http.StatusOK || res.Domain(t).Name != "xn--bcher-kva.example.com" {
				t.Fatalf("%d %s", res.Status, res.Body)
			}
		})
	}
}

// TestDashboardErrors: every refusal is an Error body with the code of the
// binding table, and is in the OpenAPI document.
func TestDashboardErrors(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), testenv.NewClock(domaintest.Start).Now)
	// Held by the second project, attached to the first.
	if res := w.Call(t, w.Pro2, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "taken.example.com"}); res.Status != http.StatusCreated {
		t.Fatalf("setup: %d %s", res.Status, res.Body)
	}
	if res := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "mine.example.com"}); res.Status != http.StatusCreated {
		t.Fatalf("setup: %d %s", res.Status, res.Body)
	}
	w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "other.example.com"})

	long := strings.Repeat("a", 64) + ".example.com"
	cases := []struct {
		name         string
		key          string
		method, path string
		body         any
		ctype        string // overrides application/json
		status       int
		code         string
		message      string // a part of the message, when it matters
	}{
		{"no key", "", http.MethodGet, apitest.DashAPI + "/domains", nil, "", 401, petstore.CodeUnauthorized, ""},
		{"unknown key", "psk_nope", http.MethodGet, apitest.DashAPI + "/domains", nil, "", 401, petstore.CodeUnauthorized, ""},
		{"no key unknown path", "", http.MethodGet, apitest.DashAPI + "/nothing", nil, "", 401, petstore.CodeUnauthorized, ""},
		{"free plan", "free", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "free.example.com"}, "", 403, petstore.CodePlanRequired, "Pro"},
		{"no deploy", "undeployed", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "nodeploy.example.com"}, "", 409, petstore.CodeDeployRequired, "deploy"},
		{"held by another project", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "taken.example.com"}, "", 409, petstore.CodeConflict, "another project"},
		{"held by another project, unicode form", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "TAKEN.example.com."}, "", 409, petstore.CodeConflict, ""},
		{"ip address", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "192.0.2.1"}, "", 400, petstore.CodeInvalidRequest, "IP address"},
		{"ipv6 address", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "[2001:db8::1]"}, "", 400, petstore.CodeInvalidRequest, "IP address"},
		{"wildcard not first", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "shop.*.example.com"}, "", 400, petstore.CodeInvalidRequest, "wildcard"},
		{"single label", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "localhost"}, "", 400, petstore.CodeInvalidRequest, "single label"},
		{"empty label", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "shop..example.com"}, "", 400, petstore.CodeInvalidRequest, "empty label"},
		{"label over 63", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": long}, "", 400, petstore.CodeInvalidRequest, "63"},
		{"public suffix", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "co.uk"}, "", 400, petstore.CodeInvalidRequest, "public suffix"},
		{"platform's own", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "x." + apitest.Target}, "", 400, petstore.CodeInvalidRequest, "platform"},
		{"url not name", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{"name": "https://shop.example.com/"}, "", 400, petstore.CodeInvalidRequest, ""},
		{"missing name", "pro", http.MethodPost, apitest.DashAPI + "/domains", map[string]string{}, "", 400, petstore.CodeInvalidRequest, "name is required"},
		{"name not a string", "pro", http.MethodPost, apitest.DashAPI + "/domains", `{"name": 42}`, "", 400, petstore.CodeInvalidRequest, "name must be a string"},
		{"body not json", "pro", http.MethodPost, apitest.DashAPI + "/domains", `name=shop`, "", 400, petstore.CodeInvalidRequest, "JSON object"},
		{"body an array", "pro", http.MethodPost, apitest.DashAPI + "/domains", `[{"name":"a.example.com"}]`, "", 400, petstore.CodeInvalidRequest, "JSON object"},
		{"two objects", "pro", http.MethodPost, apitest.DashAPI + "/domains", `{"name":"a.example.com"}{}`, "", 400, petstore.CodeInvalidRequest, "exactly one"},
		{"wrong media type", "pro", http.MethodPost, apitest.DashAPI + "/domains", `{"name":"a.example.com"}`, "text/plain", 415, petstore.CodeUnsupportedMediaType, ""},
		{"too large", "pro", http.MethodPost, apitest.DashAPI + "/domains", `{"name":"` + strings.Repeat("a", 1<<20) + `"}`, "", 413, petstore.CodePayloadTooLarge, ""},
		{"unknown domain", "pro", http.MethodGet, apitest.DashAPI + "/domains/nope.example.com", nil, "", 404, petstore.CodeNotFound, ""},
		{"another project's domain", "pro", http.MethodGet, apitest.DashAPI + "/domains/taken.example.com", nil, "", 404, petstore.CodeNotFound, ""},
		{"verify another project's domain", "pro", http.MethodPost, apitest.DashAPI + "/domains/taken.example.com/verify", nil, "", 404, petstore.CodeNotFound, ""},
		{"remove another project's domain", "pro", http.MethodDelete, apitest.DashAPI + "/domains/taken.example.com", nil, "", 404, petstore.CodeNotFound, ""},
		{"invalid name in path", "pro", http.MethodGet, apitest.DashAPI + "/domains/a..b", nil, "", 400, petstore.CodeInvalidRequest, ""},
		{"config: primary not attached", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", map[string]any{"primary": "taken.example.com"}, "", 400, petstore.CodeInvalidRequest, "not a domain of this project"},
		{"config: bad status", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", map[string]any{"redirects": []map[string]any{{"from": "mine.example.com", "to": "other.example.com", "status": 303}}}, "", 400, petstore.CodeInvalidRequest, "301, 302, 307 or 308"},
		{"config: redirect from primary", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", map[string]any{"primary": "mine.example.com", "redirects": []map[string]any{{"from": "mine.example.com", "to": "other.example.com"}}}, "", 400, petstore.CodeInvalidRequest, "primary"},
		{"config: loop", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", map[string]any{"redirects": []map[string]any{{"from": "mine.example.com", "to": "other.example.com"}, {"from": "other.example.com", "to": "mine.example.com"}}}, "", 400, petstore.CodeInvalidRequest, "chain or a loop"},
		{"config: missing to", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", map[string]any{"redirects": []map[string]any{{"from": "mine.example.com"}}}, "", 400, petstore.CodeInvalidRequest, "from and to"},
		{"config: redirects not a list", "pro", http.MethodPut, apitest.DashAPI + "/domains/config", `{"redirects": {}}`, "", 400, petstore.CodeInvalidRequest, "redirects must be a list"},
		{"unknown api path", "pro", http.MethodGet, apitest.DashAPI + "/nothing", nil, "", 404, petstore.CodeNotFound, ""},
		{"unknown sub path", "pro", http.MethodGet, apitest.DashAPI + "/domains/mine.example.com/extra", nil, "", 404, petstore.CodeNotFound, ""},
		{"wrong method on list", "pro", http.MethodDelete, apitest.DashAPI + "/domains", nil, "", 405, petstore.CodeMethodNotAllowed, ""},
		{"wrong method on verify", "pro", http.MethodGet, apitest.DashAPI + "/domains/mine.example.com/verify", nil, "", 405, petstore.CodeMethodNotAllowed, ""},
		{"wrong method on config", "pro", http.MethodPost, apitest.DashAPI + "/domains/config", nil, "", 405, petstore.CodeMethodNotAllowed, ""},
	}
	secrets := map[string]string{"pro": w.Pro, "free": w.Free, "undeployed": w.Undeployed, "psk_nope": "psk_nope"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res apitest.Response
			if c.ctype != "" {
				req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body.(string)))
				req.Header.Set("Content-Type", c.ctype)
				req.Header.Set("Authorization", "Bearer "+secrets[c.key])
				res = apitest.DashboardDo(t, w.Dash, req)
			} else {
				res = w.Call(t, secrets[c.key], c.method, c.path, c.body)
			}
			if res.Status != c.status {
				t.Fatalf("status = %d, want %d: %s", res.Status, c.status, res.Body)
			}
			e := res.ErrorBody(t)
			if e.Code != c.code || !strings.Contains(e.Message, c.message) {
				t.Fatalf("error = %+v, want code %s with %q", e, c.code, c.message)
			}
			switch c.status {
			case 401:
				if res.Header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			case 405:
				if res.Header.Get("Allow") == "" {
					t.Fatal("405 without Allow")
				}
			}
		})
	}
	// Nothing was attached by the refused requests.
	res := w.Call(t, w.Pro, http.MethodGet, apitest.DashAPI+"/domains", nil)
	for _, bad := range []string{"free.example.com", "nodeploy.example.com", "taken.example.com"} {
		if strings.Contains(string(res.Body), bad) {
			t.Fatalf("refused name %s is attached: %s", bad, res.Body)
		}
	}
}

// TestDashboardPage: the page and its assets need no key, carry a strict
// Content-Security-Policy and are revalidated with ETags; the OpenAPI
// document is public and marked beta throughout.
func TestDashboardPage(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t, apitest.Stores(t)["memstore"](t), testenv.NewClock(domaintest.Start).Now)
	cases := []struct {
		path, ctype, contains string
	}{
		{"/dashboard/", "text/html; charset=utf-8", "Project settings"},
		{"/dashboard/dashboard.css", "text/css; charset=utf-8", ".badge"},
		{"/dashboard/dashboard.js", "text/javascript; charset=utf-8", "api/"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w.Dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != c.ctype || !strings.Contains(rec.Body.String(), c.contains) {
				t.Fatalf("%d %q %.80s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Fatalf("CSP = %q", csp)
			}
			etag := rec.Header().Get("ETag")
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			req.Header.Set("If-None-Match", etag)
			rec = httptest.NewRecorder()
			w.Dash.ServeHTTP(rec, req)
			if etag == "" || rec.Code != http.StatusNotModified {
				t.Fatalf("revalidation with ETag %q: %d", etag, rec.Code)
			}
		})
	}
	t.Run("no trailing slash", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w.Dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/dashboard", nil))
		if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/dashboard/" {
			t.Fatalf("%d %q", rec.Code, rec.Header().Get("Location"))
		}
	})
	t.Run("no CDN", func(t *testing.T) {
		for _, p := range []string{"/dashboard/", "/dashboard/dashboard.js", "/dashboard/webhooks.js", "/dashboard/dashboard.css"} {
			rec := httptest.NewRecorder()
			w.Dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
			if strings.Contains(rec.Body.String(), "http://") || strings.Contains(rec.Body.String(), "https://") {
				t.Fatalf("%s loads something from another origin", p)
			}
		}
	})
	t.Run("openapi", func(t *testing.T) {
		res := apitest.DashboardDo(t, w.Dash, httptest.NewRequest(http.MethodGet, apitest.DashAPI+"/openapi.json", nil))
		var doc struct {
			OpenAPI string `json:"openapi"`
			Info    struct {
				Stability string `json:"x-stability"`
			} `json:"info"`
			Servers []struct {
				URL string `json:"url"`
			} `json:"servers"`
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(res.Body, &doc); err != nil {
			t.Fatal(err)
		}
		if res.Status != 200 || doc.OpenAPI != "3.0.3" || doc.Info.Stability != "beta" || doc.Servers[0].URL != apitest.DashAPI {
			t.Fatalf("document: %d %+v", res.Status, doc)
		}
		ops := 0
		for path, item := range doc.Paths {
			for method, raw := range item {
				if method == "parameters" {
					continue
				}
				ops++
				var op struct {
					Stability string `json:"x-stability"`
				}
				if err := json.Unmarshal(raw, &op); err != nil || op.Stability != "beta" {
					t.Errorf("%s %s is not marked x-stability: beta", method, path)
				}
			}
		}
		if ops != 15 {
			t.Fatalf("document has %d operations, want 15", ops)
		}
	})
}

// TestDashboardOwnershipProof is the dangling-CNAME takeover seen through
// the dashboard: after one project removes a name whose CNAME stays, another
// project adding it is shown a TXT record to create, Verify reports
// OWNERSHIP_UNPROVEN while only the CNAME is there, the edge does not serve
// it, and it goes live once the TXT record is published.
func TestDashboardOwnershipProof(t *testing.T) {
	for name, open := range apitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := apitest.NewWorld(t, open(t), testenv.NewClock(domaintest.Start).Now)
			w.SetCNAME(t, "shop", apitest.Target)
			w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			if d := w.Call(t, w.Pro, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil).Domain(t); d.Status != customdomain.StatusActive {
				t.Fatalf("first project: %s", d.Status)
			}
			if res := w.Call(t, w.Pro, http.MethodDelete, apitest.DashAPI+"/domains/shop.example.com", nil); res.Status != http.StatusNoContent {
				t.Fatalf("remove: %d %s", res.Status, res.Body)
			}

			res := w.Call(t, w.Pro2, http.MethodPost, apitest.DashAPI+"/domains", map[string]string{"name": "shop.example.com"})
			d := res.Domain(t)
			if res.Status != http.StatusCreated || len(d.Records) != 2 || d.Records[1].Type != "TXT" ||
				d.Records[1].Name != "_petstore-challenge.shop" || !strings.HasPrefix(d.Records[1].Value, "petstore-verify=") ||
				!strings.Contains(d.Note, "another project") {
				t.Fatalf("add by the second project: %d %s", res.Status, res.Body)
			}
			token := d.Records[1].Value

			res = w.Call(t, w.Pro2, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil)
			if d := res.Domain(t); d.Status != customdomain.StatusPending || d.Diagnosis.NextAction != customdomain.ActionFixDNS ||
				!strings.Contains(string(res.Body), `"code":"OWNERSHIP_UNPROVEN"`) || !strings.Contains(string(res.Body), token) {
				t.Fatalf("verify with the CNAME only: %d %s", res.Status, res.Body)
			}
			if got := w.Get(t, "shop.example.com", "/", ""); got.Code != http.StatusNotFound {
				t.Fatalf("unproven domain served: %d %s", got.Code, got.Body)
			}

			w.AddTXT(t, "_petstore-challenge.shop", token)
			res = w.Call(t, w.Pro2, http.MethodPost, apitest.DashAPI+"/domains/shop.example.com/verify", nil)
			if d := res.Domain(t); d.Status != customdomain.StatusActive {
				t.Fatalf("verify with the TXT: %d %s", res.Status, res.Body)
			}
			if page := w.Get(t, "shop.example.com", "/", ""); page.Code != http.StatusOK || !strings.Contains(page.Body.String(), w.Pro2Key.ProjectID) {
				t.Fatalf("proven domain: %d %s", page.Code, page.Body)
			}
		})
	}
}
