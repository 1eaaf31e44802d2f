package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/testenv"
)

// waitingParallel is how many of the parallel tests run at once unless
// -parallel says otherwise: they wait for a -db-timeout, a paused link, a
// server starting or stopping.
const waitingParallel = 4

// builds compiles the server once for the tests that start it as a
// process (a link takes over a second).
var builds testenv.Builds

// TestMain raises go test's default -parallel to waitingParallel where
// there are fewer cores (testenv.RaiseParallel). It removes the binaries
// builds compiled once the tests are done.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.RaiseParallel(waitingParallel)
	code := m.Run()
	builds.Remove()
	os.Exit(code)
}

// Operator keys for -keys: random enough for petstore.CheckSecretStrength.
const (
	testKey  = "psk_Test3vR8mQ2xK7pW9nL4zYa1"
	testKey1 = "psk_One6fH2kT9wB4qZ7xN3cRi7s"
	testKey2 = "psk_Two8gJ3nY5rC1vM6pD9sEo4u"
)

// start runs the server on a free loopback port and returns its base URL
// and everything it printed before listening. Unless the test chooses a
// database, it gets a private in-memory one.
func start(t *testing.T, args []string, env map[string]string) (base string, printed []string) {
	t.Helper()
	base, printed, _ = startStoppable(t, args, env)
	return base, printed
}

// startStoppable is start with a stop function that shuts the server down
// and waits for run to return.
func startStoppable(t *testing.T, args []string, env map[string]string) (base string, printed []string, stop func()) {
	t.Helper()
	s := startServer(t, args, env)
	return s.base, s.printed, s.stop
}

// testServer is a server run by startServer.
type testServer struct {
	base    string
	printed []string    // stdout up to the "listening on" line
	stop    func()      // shuts the server down and waits for run to return
	stdout  *syncBuffer // stdout after the "listening on" line
	logs    *syncBuffer // stderr: the log
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer is startStoppable, keeping what the server writes later.
func startServer(t *testing.T, args []string, env map[string]string) *testServer {
	t.Helper()
	ts := &testServer{stdout: &syncBuffer{}, logs: &syncBuffer{}}
	if !slices.Contains(args, "-db") && env["PETSTORE_DB"] == "" {
		args = append([]string{"-db", "memory"}, args...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, pw, ts.logs)
		pw.Close()
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)/v1 `)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("server exited: %v", <-done)
			}
			ts.printed = append(ts.printed, l)
			if m := listening.FindStringSubmatch(l); m != nil {
				go func() { // keep draining so printing never blocks the server
					for l := range lines {
						fmt.Fprintln(ts.stdout, l)
					}
				}()
				ts.base, ts.stop = m[1], stop
				return ts
			}
		case <-timeout:
			t.Fatal("server did not start")
		}
	}
}

func get(t *testing.T, url, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestRunDemoKey(t *testing.T) {
	base, printed := start(t, []string{"-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`curl -H 'Authorization: Bearer (psk_\S+)' (\S+)`).FindStringSubmatch(strings.Join(printed, "\n"))
	if m == nil {
		t.Fatalf("no curl line in:\n%s", strings.Join(printed, "\n"))
	}
	if m[2] != base+"/v1/pets" {
		t.Fatalf("curl URL %q, want %s/v1/pets", m[2], base)
	}
	if res := get(t, m[2], m[1]); res.StatusCode != 200 {
		t.Fatalf("demo key: %d", res.StatusCode)
	}
	if res := get(t, base+"/v1/pets", "psk_wrong"); res.StatusCode != 401 {
		t.Fatalf("wrong key: %d", res.StatusCode)
	}
}

func TestRunConfiguredKeys(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-addr", "127.0.0.1:0", "-keys", testKey1 + ":free," + testKey2 + ":enterprise:5/50"}, nil},
		{"environment", nil, map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_API_KEYS": testKey1 + ":free," + testKey2 + ":enterprise:5/50"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, printed := start(t, tt.args, tt.env)
			if strings.Contains(strings.Join(printed, "\n"), "demo") {
				t.Fatal("a demo key was made although keys were configured")
			}
			for _, k := range []string{testKey1, testKey2} {
				if res := get(t, base+"/v1/pets", k); res.StatusCode != 200 {
					t.Fatalf("key %s: %d", k, res.StatusCode)
				}
			}
		})
	}
}

// TestSubcommandsRefuseAMemoryDatabase: with -db memory the keys live in
// the serving process only, so "keys create" would print a key that no
// server accepts and "keys revoke" would revoke nothing; the subcommands
// that manage the database refuse it and store nothing.
func TestSubcommandsRefuseAMemoryDatabase(t *testing.T) {
	for _, args := range [][]string{
		{"keys", "create", "-plan", "pro"},
		{"keys", "list"},
		{"keys", "revoke", "key_x"},
		{"projects", "list"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"-db", "memory"}, args...), func(string) string { return "" }, &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-db memory") {
			t.Errorf("%v with -db memory: %v, want an error naming -db memory", args, err)
		}
		if strings.Contains(out.String(), "psk_") {
			t.Errorf("%v with -db memory printed a key no server will accept:\n%s", args, out.String())
		}
	}
}
