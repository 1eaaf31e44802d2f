package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeCurlSession keeps the README's curl session true: the header
// fields it shows for the created pet are the ones a plain server sends,
// no more and no fewer (Date and Content-Length aside, which net/http
// adds), and the body is the one shown.
func TestReadmeCurlSession(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The answer to the POST: from "HTTP/1.1 201 Created" to the body.
	m := regexp.MustCompile(`(?s)\nHTTP/1\.1 201 Created\n(.*?)\n\n(\{[^\n]*\})\n`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md shows no 201 answer in its curl session")
	}
	var shown []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		name, _, ok := strings.Cut(line, ": ")
		if ok && name != "Date" && name != "Content-Length" {
			shown = append(shown, name)
		}
	}
	slices.Sort(shown)

	base, printed := start(t, []string{"-addr", "127.0.0.1:0"}, nil)
	key := demoKeyRE.FindStringSubmatch(strings.Join(printed, "\n"))
	if key == nil {
		t.Fatalf("no demo key printed:\n%s", strings.Join(printed, "\n"))
	}
	status, header, body := call(t, "POST", base+"/v1/pets", key[1], "", `{"name":"Rex","categoryId":1,"status":"available"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/pets: %d %s", status, body)
	}
	var sent []string
	for name := range header {
		if name != "Date" && name != "Content-Length" {
			sent = append(sent, name)
		}
	}
	slices.Sort(sent)
	if !slices.Equal(shown, sent) {
		t.Errorf("the README shows the header fields %q, the server sends %q", shown, sent)
	}
	if got, want := strings.TrimSpace(body), string(m[2]); got != want {
		t.Errorf("the README shows the body %s, the server sends %s", want, got)
	}
}

// TestReadmeRedisPrefixIsTheServers keeps the README's "Compose it"
// limiter on the keys this server uses: a process built from the snippet
// beside servers with the default -redis-prefix must share their counters
// and bans, and `bans list` must see its bans.
func TestReadmeRedisPrefixIsTheServers(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`redislimit\.New\(\w+, "([^"]*)"\)`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md builds no redislimit.New store")
	}
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(m[1]), limitPrefix(cfg); got != want {
		t.Errorf("README.md keeps limits under %q; examples/server (default -redis-prefix) under %q", got, want)
	}
}
