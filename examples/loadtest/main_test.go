package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/memstore"
	"github.com/petstorekit/petstore/internal/testenv"
)

// lockedBuffer is an access log the test can read after the run.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunServesEveryEndpointOnBareAndMemstore(t *testing.T) {
	logs := &lockedBuffer{}
	opts := options{
		duration:  100 * time.Millisecond,
		rounds:    2,
		conns:     4,
		servers:   []string{serverBare, serverBareHeaders, serverMemstore},
		endpoints: endpointNames(),
		accessLog: logs,
	}
	var progress strings.Builder
	results, err := run(context.Background(), opts, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(results), len(opts.servers)*len(endpoints); got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	// Each round starts one server further on.
	var order [3][]string // by round, the servers of the first endpoint
	for line := range strings.Lines(progress.String()) {
		var round, of int
		f := strings.Fields(line)
		if n, _ := fmt.Sscanf(line, "round %d/%d", &round, &of); n == 2 && strings.Contains(line, endpoints[0].label) {
			order[round] = append(order[round], f[4])
		}
	}
	if want := [3][]string{nil, {serverBare, serverBareHeaders, serverMemstore}, {serverBareHeaders, serverMemstore, serverBare}}; !reflect.DeepEqual(order, want) {
		t.Errorf("servers in order %v, want %v; progress:\n%s", order, want, progress.String())
	}
	for _, r := range results {
		if len(r.rounds) != opts.rounds {
			t.Errorf("%s on %s: %d rounds, want %d", r.endpoint.label, r.server, len(r.rounds), opts.rounds)
		}
		if r.median() <= 0 {
			t.Errorf("%s on %s: %v req/s, want some", r.endpoint.label, r.server, r.median())
		}
		if n := r.all.failed(r.endpoint.want); n != 0 {
			t.Errorf("%s on %s: %d requests not served: %v (transport: %d, %s)",
				r.endpoint.label, r.server, n, r.all.statuses, r.all.transport, r.all.firstErr)
		}
		if got := r.all.statuses[r.endpoint.want]; got == 0 || got != r.all.served {
			t.Errorf("%s on %s: statuses %v, want only %d", r.endpoint.label, r.server, r.all.statuses, r.endpoint.want)
		}
		if _, known := processCPU(); known && r.cpuPerRequest() <= 0 {
			t.Errorf("%s on %s: CPU per request %v, want some", r.endpoint.label, r.server, r.cpuPerRequest())
		}
		if p50, p99 := r.percentile(0.5), r.percentile(0.99); p50 <= 0 || p99 < p50 {
			t.Errorf("%s on %s: p50 %v, p99 %v", r.endpoint.label, r.server, p50, p99)
		}
	}
	if s := errorSummary(results); s != "" {
		t.Errorf("error summary of a clean run: %q", s)
	}

	// The full stack's access log is really written, as JSON lines.
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	lines := 0
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines == 0 {
		t.Error("the full stack wrote no access log")
	}

	var table strings.Builder
	writeTable(&table, results)
	if !regexp.MustCompile(`\| memstore \|.* \| \d\.\d\d \(\d\.\d\d–\d\.\d\d\) \|`).MatchString(table.String()) {
		t.Errorf("no memstore ratio with its range over 2 rounds:\n%s", table.String())
	}
	for _, want := range []string{"| `GET /v1/pets?limit=20` | memstore |", "| `POST /v1/pets` | bare |", "| 1.00 |", "ratio to bare-headers", "| CPU/req |", " µs |", "| `GET /v1/pets/{id}` | bare-headers |"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// A ratio is that of the medians over rounds, and its bracket the lowest
// and highest ratio within one round.
func TestRatioAndItsRangeOverRounds(t *testing.T) {
	list := endpointByName("list")
	bare := result{server: serverBare, endpoint: list, rounds: []float64{100, 200, 100}}
	full := result{server: serverMemstore, endpoint: list, rounds: []float64{80, 150, 90}}
	lo, hi, ok := roundRatios(full, bare)
	if !ok || lo != 0.75 || hi != 0.9 {
		t.Errorf("roundRatios = %v–%v %v, want 0.75–0.9", lo, hi, ok)
	}
	if _, _, ok := roundRatios(full, result{server: serverBare, endpoint: list}); ok {
		t.Error("a range of ratios to a server with no rounds")
	}
	var table strings.Builder
	writeTable(&table, []result{bare, full})
	for _, want := range []string{"| `GET /v1/pets?limit=20` | bare | 100 | ", " | 1.00 | 0 |", "| `GET /v1/pets?limit=20` | memstore | 90 | ", " | 0.90 (0.75–0.90) | 0 |"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestMeasureCountsWhatIsNotServed(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	u, stop, err := serve(h)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tgt := &target{name: "failing", url: u, petIDs: []string{"1"}}
	create := endpointByName("create")
	s := measure(context.Background(), tgt, create, 2, 50*time.Millisecond)
	if s.served != 0 || s.statuses[http.StatusServiceUnavailable] == 0 {
		t.Fatalf("served %d, statuses %v; want only 503s", s.served, s.statuses)
	}
	r := result{server: "failing", endpoint: create, rounds: []float64{s.rate()}, all: s}
	summary := errorSummary([]result{r})
	if !strings.HasPrefix(summary, "ERRORS:") || !strings.Contains(summary, "status 503") {
		t.Errorf("summary %q does not report the 503s", summary)
	}

	// A server that is gone: every request is a transport error.
	stop()
	s = measure(context.Background(), tgt, create, 2, 50*time.Millisecond)
	if s.served != 0 || s.transport == 0 || s.firstErr == "" {
		t.Fatalf("served %d, transport errors %d (%q); want only transport errors", s.served, s.transport, s.firstErr)
	}
	if summary := errorSummary([]result{{server: "gone", endpoint: create, all: s}}); !strings.Contains(summary, "no response") {
		t.Errorf("summary %q does not report the transport errors", summary)
	}
}

func TestParseFlags(t *testing.T) {
	opts, err := parseFlags([]string{"-only", "memstore,bare", "-endpoints", "get", "-rounds", "2"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(opts.servers, ","), "bare,memstore"; got != want {
		t.Errorf("servers %s, want %s (run order)", got, want)
	}
	if got, want := strings.Join(opts.endpoints, ","), "get"; got != want {
		t.Errorf("endpoints %s, want %s", got, want)
	}
	if opts.mount {
		t.Error("-mount is on by default")
	}
	if opts, _ := parseFlags([]string{"-mount"}, ""); !opts.mount {
		t.Error("-mount does not mount")
	}
	if opts, _ := parseFlags([]string{"-memprofile", "mem.out"}, ""); opts.memProfile != "mem.out" {
		t.Errorf("-memprofile mem.out gives %q", opts.memProfile)
	}
	if opts, _ := parseFlags(nil, ""); strings.Contains(strings.Join(opts.servers, ","), "postgres") {
		t.Errorf("postgres runs without PETSTORE_TEST_POSTGRES: %v", opts.servers)
	}
	if opts, _ := parseFlags(nil, "postgres://x@127.0.0.1/db"); !strings.Contains(strings.Join(opts.servers, ","), "postgres") {
		t.Errorf("postgres does not run with PETSTORE_TEST_POSTGRES: %v", opts.servers)
	}
	for _, args := range [][]string{
		{"-only", "postgres"},
		{"-only", "mysql"},
		{"-endpoints", "delete"},
		{"-rounds", "0"},
		{"-conns", "0"},
		{"extra"},
	} {
		if _, err := parseFlags(args, ""); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// bare-headers answers what the full stack answers, header for header
// and byte for byte, so that the two differ only in the work done.
func TestBareHeadersReplaysTheFullStacksAnswers(t *testing.T) {
	ctx := context.Background()
	replay, err := startBareHeaders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer replay.close()
	full, err := startFullStack(ctx, serverMemstore, memstore.New(), newStack(io.Discard, false), func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer full.close()
	for _, e := range endpoints {
		got, err := ask(ctx, replay, e)
		if err != nil {
			t.Fatalf("%s on bare-headers: %v", e.label, err)
		}
		want, err := ask(ctx, full, e)
		if err != nil {
			t.Fatalf("%s on memstore: %v", e.label, err)
		}
		if got.status != want.status || !bytes.Equal(got.body, want.body) {
			t.Errorf("%s: bare-headers answers %d %s, the full stack %d %s", e.label, got.status, got.body, want.status, want.body)
		}
		for k := range want.header {
			if got.header.Get(k) == "" {
				t.Errorf("%s: bare-headers lacks %s", e.label, k)
			}
		}
		if cl := got.header.Get("Content-Length"); cl != strconv.Itoa(len(got.body)) {
			t.Errorf("%s: bare-headers sends Content-Length %q for a %d-byte body", e.label, cl, len(got.body))
		}
		if len(got.header) != len(want.header) {
			t.Errorf("%s: bare-headers sends %d headers, the full stack %d:\n%v\n%v", e.label, len(got.header), len(want.header), got.header, want.header)
		}
		if got.header.Get("X-Ratelimit-Limit") == "" || got.header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no rate-limit or request-id header in %v", e.label, got.header)
		}
	}
}

// -mount serves the full stack under a ServeMux prefix: the answers are
// the direct stack's, and the access log still names each request's route.
func TestMountedStackAnswersAsTheDirectOne(t *testing.T) {
	ctx := context.Background()
	direct, err := startFullStack(ctx, serverMemstore, memstore.New(), newStack(io.Discard, false), func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.close()
	logs := &lockedBuffer{}
	mounted, err := startFullStack(ctx, serverMemstore, memstore.New(), newStack(logs, true), func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer mounted.close()
	for _, e := range endpoints {
		want, err := ask(ctx, direct, e)
		if err != nil {
			t.Fatalf("%s direct: %v", e.label, err)
		}
		got, err := ask(ctx, mounted, e)
		if err != nil {
			t.Fatalf("%s mounted: %v", e.label, err)
		}
		if got.status != e.want || got.status != want.status || !bytes.Equal(got.body, want.body) || len(got.header) != len(want.header) {
			t.Errorf("%s: mounted answers %d %v %s, direct %d %v %s", e.label, got.status, got.header, got.body, want.status, want.header, want.body)
		}
		if !strings.Contains(logs.String(), `"route":"`+e.route+`"`) {
			t.Errorf("%s: the mounted stack's access log does not name route %q:\n%s", e.label, e.route, logs.String())
		}
	}
}

// -serve prints, for each server, what another load generator needs (URL,
// token, pet ids), serves until its context ends, and then stops them.
func TestServeOnlyPrintsWhatALoadGeneratorNeeds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveOnly(ctx, options{servers: []string{serverMemstore}, accessLog: io.Discard}, w)
		w.Close()
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("no line printed")
	}
	var name, url, token, pets string
	if _, err := fmt.Sscanf(lines.Text(), "%s %s token=%q pets=%s", &name, &url, &token, &pets); err != nil {
		t.Fatalf("line %q: %v", lines.Text(), err)
	}
	if !lines.Scan() || lines.Text() != "serving until interrupted" {
		t.Fatalf("second line %q", lines.Text())
	}
	first, _, _ := strings.Cut(pets, ",")
	req, _ := http.NewRequest("GET", url+"/v1/pets/"+first, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if name != serverMemstore || res.StatusCode != http.StatusOK {
		t.Fatalf("%s answered %d for pet %s", name, res.StatusCode, first)
	}
	cancel()
	go io.Copy(io.Discard, out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/v1/pets"); err == nil {
		t.Fatal("the server still answers after -serve returned")
	}
}

// The allocation profile -memprofile writes is one go tool pprof reads: a
// gzipped profile.proto that names the allocating functions.
func TestWriteMemProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mem.out")
	writeMemProfile(file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a gzipped profile: %v", err)
	}
	proto, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(proto, []byte("alloc_space")) {
		t.Errorf("the profile has no alloc_space sample type (%d bytes)", len(proto))
	}
}

// TestHelpIsASuccess: -h prints the usage and exits with status 0, as
// the other example programs do, without calling the request an error;
// a malformed command line still exits with status 2.
func TestHelpIsASuccess(t *testing.T) {
	bin := testenv.Build(t, ".")
	for _, tt := range []struct {
		arg  string
		want int
	}{{"-h", 0}, {"-nosuch", 2}} {
		cmd := exec.Command(bin, tt.arg)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.want || !strings.Contains(stderr.String(), "Usage of loadtest") || strings.Contains(stderr.String(), "help requested") {
			t.Errorf("%s: exit status %d, want %d, with the usage on stderr:\n%s", tt.arg, code, tt.want, stderr.String())
		}
	}
}
