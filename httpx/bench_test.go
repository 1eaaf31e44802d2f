package httpx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/logbuf"
	"github.com/petstorekit/petstore/keycache"
	"github.com/petstorekit/petstore/ratelimit"
)

// BenchmarkHandler compares the full handler (keys authenticated through
// keycache as examples/server does, routing, validation, logging to a
// discard logger, memory store) with a bare net/http handler writing a
// fixed 20-pet body, in one run:
//
//	go test -run x -bench . -benchmem ./httpx
func BenchmarkHandler(b *testing.B) {
	e := newEnv(b, func(c *httpx.Config) {
		c.Logger = nil
		c.Auth = keycache.New(c.Auth, keycache.Config{})
	})
	for i := range 100 {
		e.seed(b, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: petstore.StatusAvailable})
	}
	fixed, _ := json.Marshal(e.store.Pets()[:20])
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixed)
	})
	b.Run("bare net/http 20 pets", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			bare.ServeHTTP(w, httptest.NewRequest("GET", "/v1/pets?limit=20", nil))
		}
	})
	b.Run("GET /pets?limit=20", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, e.req("GET", "/v1/pets?limit=20", ""))
			if w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	// The same with metrics on: the labels' children are resolved once,
	// so this costs no allocation more than the line above.
	withMetrics := newEnv(b, func(c *httpx.Config) {
		c.Logger = nil
		c.Auth = keycache.New(c.Auth, keycache.Config{})
		c.Metrics = prometheus.NewRegistry()
	})
	for i := range 100 {
		withMetrics.seed(b, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: petstore.StatusAvailable})
	}
	b.Run("GET /pets?limit=20 with metrics", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			withMetrics.h.ServeHTTP(w, withMetrics.req("GET", "/v1/pets?limit=20", ""))
			if w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("POST /pets", func(b *testing.B) {
		for b.Loop() {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/pets", strings.NewReader(`{"name":"Rex","categoryId":1,"status":"sold"}`))
			r.Header.Set("Authorization", "Bearer "+e.secret)
			r.Header.Set("Content-Type", "application/json")
			e.h.ServeHTTP(w, r)
			if w.Code != 201 {
				b.Fatal(w.Code)
			}
		}
	})
}

// BenchmarkFullStack is GET /pets?limit=20 and GET /pets/{id} through the stack as
// examples/server configures it: keys through keycache, both rate-limit
// windows decided in memory, the -db-timeout deadline, and a JSON access
// log formatted for every request into a buffered writer by
// NewJSONAccessLog. "access log off" is the same stack without one: the
// difference is what the log line costs a request. "access log slog" gives
// the line to a slog.JSONHandler instead, as a Config without AccessLog
// does.
//
//	go test -run x -bench FullStack -benchmem -cpuprofile cpu.out ./httpx
func BenchmarkFullStack(b *testing.B) {
	for _, bench := range []struct{ endpoint, log string }{
		{"list", "on"}, {"list", "off"}, {"list", "slog"}, {"get", "on"}, {"get", "off"},
	} {
		target, log := "/v1/pets?limit=20", bench.log
		if bench.endpoint == "get" {
			target = "/v1/pets/1"
		}
		b.Run(bench.endpoint+"/access log "+log, func(b *testing.B) {
			logs := logbuf.New(io.Discard, 0)
			defer logs.Close()
			e := newEnv(b, func(c *httpx.Config) {
				c.Logger = nil
				switch log {
				case "on":
					c.AccessLog = httpx.NewJSONAccessLog(logs)
				case "slog":
					c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
				}
				c.Auth = keycache.New(c.Auth, keycache.Config{})
				c.Limiter = ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Config{})
				c.Timeout = 5 * time.Second
			})
			if _, err := e.store.UpsertKey(context.Background(), petstore.APIKey{ID: e.key.ID, ProjectID: e.key.ProjectID, Plan: petstore.PlanEnterprise,
				Limits: petstore.Limits{PerMinute: 1 << 40, PerDay: 1 << 40}}, petstore.HashAPIKey(e.secret)); err != nil {
				b.Fatal(err)
			}
			for i := range 25 {
				e.seed(b, petstore.NewPet{Name: fmt.Sprintf("pet %d", i), CategoryID: 1, Status: petstore.StatusAvailable})
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w := httptest.NewRecorder()
					e.h.ServeHTTP(w, e.req("GET", target, ""))
					if w.Code != 200 {
						b.Fatal(w.Code, w.Body)
					}
				}
			})
		})
	}
}

// BenchmarkHeaderFields is what net/http does with a page of pets' header
// fields on every answer, after the handler set them: clone the map (at
// WriteHeader) and write it out sorted. "7" is the default answer (net/http
// adds Content-Length and Date out of the map); "8" is one field more, as
// when the handler sets Content-Length itself; "9" adds the IETF draft's
// RateLimit-Policy and RateLimit, which take the map past the eight fields
// a Go map holds without growing (see Config.IETFRateLimitHeaders):
//
//	go test -run x -bench HeaderFields -benchmem ./httpx
func BenchmarkHeaderFields(b *testing.B) {
	fields := [][2]string{
		{"Content-Type", "application/json"},
		{"X-Content-Type-Options", "nosniff"},
		{"Link", `</v1/pets?cursor=djE6MjA&limit=20>; rel="next"`},
		{"X-Ratelimit-Limit", "60"},
		{"X-Ratelimit-Remaining", "59"},
		{"X-Ratelimit-Reset", "1795626331"},
		{"X-Request-Id", "01a213aa-7e73-7d29-80c6-c4e00508c21b"},
		{"Ratelimit-Policy", `"minute";q=60;w=60, "day";q=1000;w=86400`},
		{"Ratelimit", `"minute";r=59;t=60, "day";r=999;t=86400`},
	}
	for _, n := range []int{7, 8, 9} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h := make(http.Header) // as net/http makes a response's
				for _, f := range fields[:n] {
					h[f[0]] = []string{f[1]}
				}
				_ = h.Clone().WriteSubset(io.Discard, nil)
			}
		})
	}
}
