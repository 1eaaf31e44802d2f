package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/internal/testenv"
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

// TestPrintedCurlWorks: the curl command the program prints reaches the
// API with the key it names, also when -addr leaves the host or the port
// to the system (":8080", "127.0.0.1:0"), where the address as typed is
// no URL curl can use.
func TestPrintedCurlWorks(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://localhost:8080/api/v1/pets"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://localhost:8080/api/v1/pets"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080/api/v1/pets"},
	} {
		if got := tryURL(tt.addr); got != tt.want {
			t.Errorf("tryURL(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}

	cmd := exec.Command(testenv.Build(t, "."), "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^try: curl -H 'Authorization: Bearer (\S+)' (\S+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("printed %q, want a curl command", line)
	}
	req, err := http.NewRequest("GET", m[2], nil)
	if err != nil {
		t.Fatalf("printed %q: %v", line, err)
	}
	req.Header.Set("Authorization", "Bearer "+m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("printed %q: %v", line, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("printed %q: GET answered %d, want 200", line, resp.StatusCode)
	}
}
