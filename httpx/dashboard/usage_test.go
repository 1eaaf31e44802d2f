package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/httpx/dashboard"
	"github.com/petstorekit/petstore/internal/apitest"
	"github.com/petstorekit/petstore/internal/domaintest"
	"github.com/petstorekit/petstore/ratelimit"
)

type usageJSON struct {
	KeyID   string `json:"keyId"`
	Plan    string `json:"plan"`
	Windows []struct {
		Name                   string
		Quota, Used, Remaining int64
		ResetsAt               time.Time `json:"resetsAt"`
	} `json:"windows"`
	Minutes []ratelimit.Minute `json:"minutes"`
	Ban     *struct {
		Until  time.Time `json:"until"`
		Reason string    `json:"reason"`
	} `json:"ban"`
}

// TestDashboardUsage: the Usage panel's figures after real requests
// through the API and one limiter: the windows against the plan's limits,
// the last hour minute by minute with refusals, and the ban, which the
// banned key can still read.
func TestDashboardUsage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }
	store := memstore.New()
	keys := petstore.NewKeys(store)
	key, secret, err := keys.Create(ctx, "", petstore.PlanEnterprise, petstore.Limits{PerMinute: 3, PerDay: 100})
	if err != nil {
		t.Fatal(err)
	}
	limiter := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{
		Clock:     clock,
		History:   ratelimit.NewHistory(ratelimit.HistoryConfig{KeepPrefix: httpx.KeySubject("")}),
		BanPolicy: ratelimit.BanPolicy{Strikes: 3, Within: time.Minute, Grace: -1, Duration: 15 * time.Minute},
	})
	api, err := httpx.New(httpx.Config{Service: petstore.NewService(store), Auth: keys, Limiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	eng := domaintest.New(t, domaintest.Options{Store: store}).Engine // the usage panel asks it nothing
	dash, err := dashboard.New(dashboard.Config{Engine: eng, Auth: keys, Limiter: limiter, Usage: limiter})
	if err != nil {
		t.Fatal(err)
	}
	call := func(h http.Handler, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, apitest.AuthedReq(secret, "GET", target, ""))
		return w
	}
	usage := func() usageJSON {
		t.Helper()
		w := call(dash, "/dashboard/api/usage")
		if w.Code != 200 || w.Header().Get("X-API-Stability") != "beta" {
			t.Fatalf("usage: %d %s", w.Code, w.Body)
		}
		var u usageJSON
		if err := json.Unmarshal(w.Body.Bytes(), &u); err != nil {
			t.Fatal(err)
		}
		return u
	}

	// A key that has sent nothing has windows that have not started.
	for _, w := range usage().Windows {
		if !w.ResetsAt.IsZero() {
			t.Fatalf("window %s of a fresh key resets at %v; want none", w.Name, w.ResetsAt)
		}
	}
	for range 5 { // 3 admitted, 2 refused
		call(api, "/v1/pets")
	}
	u := usage()
	if !u.Windows[0].ResetsAt.Equal(now.Add(time.Minute)) {
		t.Errorf("the minute resets at %v, want %v", u.Windows[0].ResetsAt, now.Add(time.Minute))
	}
	if u.KeyID != key.ID || u.Plan != "enterprise" || len(u.Windows) != 2 || len(u.Minutes) != ratelimit.HistoryMinutes {
		t.Fatalf("usage: %+v", u)
	}
	if m, d := u.Windows[0], u.Windows[1]; m.Name != "minute" || m.Quota != 3 || m.Used != 3 || m.Remaining != 0 || d.Name != "day" || d.Quota != 100 || d.Used != 3 {
		t.Errorf("windows: %+v", u.Windows)
	}
	if last := u.Minutes[len(u.Minutes)-1]; last.Admitted != 3 || last.Refused != 2 {
		t.Errorf("this minute: %+v, want 3 admitted and 2 refused (the usage reads are not the key's)", last)
	}
	if u.Ban != nil {
		t.Fatalf("banned too early: %+v", u.Ban)
	}

	// Two more refusals strike the key out; the banned key still reads
	// its usage, with until when and why.
	for range 2 {
		call(api, "/v1/pets")
	}
	if w := call(api, "/v1/pets"); w.Code != 429 {
		t.Fatalf("after the strikes: %d", w.Code)
	}
	u = usage()
	if u.Ban == nil || !u.Ban.Until.Equal(now.Add(15*time.Minute)) || u.Ban.Reason == "" {
		t.Fatalf("ban: %+v", u.Ban)
	}

	// A minute later the chart has moved on by one minute.
	now = now.Add(time.Minute)
	u = usage()
	if prev := u.Minutes[len(u.Minutes)-2]; prev.Admitted != 3 || prev.Refused < 4 {
		t.Errorf("the minute before: %+v", prev)
	}
	if last := u.Minutes[len(u.Minutes)-1]; last.Admitted+last.Refused != 0 {
		t.Errorf("this minute: %+v, want nothing yet", last)
	}
}

// TestDashboardIETFRateLimitHeadersDeclared: with IETFRateLimitHeaders
// the dashboard API sends the IETF draft's RateLimit-Policy and
// RateLimit, as /v1 does, and its OpenAPI document declares them.
func TestDashboardIETFRateLimitHeadersDeclared(t *testing.T) {
	store := memstore.New()
	keys := petstore.NewKeys(store)
	_, secret, err := keys.Create(context.Background(), "", petstore.PlanPro, petstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	limiter := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
	dash, err := dashboard.New(dashboard.Config{Engine: domaintest.New(t, domaintest.Options{Store: store}).Engine, Auth: keys,
		Limiter: limiter, IETFRateLimitHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	router := apitest.DocumentRouter(t, "/dashboard/api/openapi.json", func() http.Handler { return dash })
	req := func() *http.Request { return apitest.AuthedReq(secret, "GET", "/dashboard/api/domains", "") }
	res := apitest.DashboardDo(t, dash, req())
	if res.Status != http.StatusOK || res.Header.Get("RateLimit") == "" || res.Header.Get("RateLimit-Policy") == "" {
		t.Fatalf("%d %s, RateLimit %q, RateLimit-Policy %q; want 200 with both", res.Status, res.Body, res.Header.Get("RateLimit"), res.Header.Get("RateLimit-Policy"))
	}
	if u := apitest.UndeclaredHeaders(t, router, req(), res); len(u) > 0 {
		t.Fatalf("the 200 carries %v, which the document does not declare", u)
	}
}
