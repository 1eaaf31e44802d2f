package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
)

func TestMountedNextToOwnRoutes(t *testing.T) {
	for _, router := range []string{"std", "chi"} {
		t.Run(router, func(t *testing.T) {
			t.Parallel()
			h, secret, err := build(context.Background(), router, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			tests := []struct {
				name, method, path, body string
				auth                     bool
				wantStatus               int
				wantType                 string
				check                    func(t *testing.T, h http.Header, body string)
			}{
				{"owner's home", "GET", "/", "", false, 200, "text/plain; charset=utf-8", nil},
				{"owner's health", "GET", "/healthz", "", false, 200, "text/plain; charset=utf-8", nil},
				{"api needs a key", "GET", APIBase + "/pets", "", false, 401, "application/json", nil},
				{"api create", "POST", APIBase + "/pets", `{"name":"Rex","categoryId":1}`, true, 201, "application/json", func(t *testing.T, h http.Header, body string) {
					if got := h.Get("Location"); got != APIBase+"/pets/1" {
						t.Fatalf("Location = %q, want %s/pets/1", got, APIBase)
					}
				}},
				{"api list", "GET", APIBase + "/pets", "", true, 200, "application/json", func(t *testing.T, h http.Header, body string) {
					var pets []petstore.Pet
					if err := json.Unmarshal([]byte(body), &pets); err != nil || len(pets) != 1 || pets[0].Name != "Rex" {
						t.Fatalf("pets = %s", body)
					}
				}},
				{"api unknown path is JSON", "GET", APIBase + "/nope", "", true, 404, "application/json", nil},
				{"api wrong method keeps Allow", "DELETE", APIBase + "/pets", "", true, 405, "application/json", func(t *testing.T, h http.Header, body string) {
					if h.Get("Allow") != "GET, HEAD, POST" {
						t.Fatalf("Allow = %q", h.Get("Allow"))
					}
				}},
				{"openapi is public", "GET", APIBase + "/openapi.json", "", false, 200, "application/json", nil},
				{"old /v1 is not mounted", "GET", "/v1/pets", "", true, 404, "", nil},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					req, _ := http.NewRequest(tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
					if tt.auth {
						req.Header.Set("Authorization", "Bearer "+secret)
					}
					if tt.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					resp, err := ts.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != tt.wantStatus {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, b)
					}
					if tt.wantType != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.wantType) {
						t.Fatalf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.wantType)
					}
					// The owner's middleware wraps the API too.
					if resp.Header.Get("X-Served-By") != "shop" {
						t.Fatal("the owner's middleware did not run")
					}
					// Every API response reports the limits; the owner's
					// own routes are not limited by the API.
					isAPI := strings.HasPrefix(tt.path, APIBase+"/")
					for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
						if got := resp.Header.Get(h) != ""; got != isAPI {
							t.Fatalf("%s present = %v, want %v", h, got, isAPI)
						}
					}
					if tt.check != nil {
						tt.check(t, resp.Header, string(b))
					}
				})
			}
		})
	}
}

func TestUnknownRouter(t *testing.T) {
	if _, _, err := build(context.Background(), "gorilla", io.Discard); err == nil {
		t.Fatal("build accepted an unknown router")
	}
}
