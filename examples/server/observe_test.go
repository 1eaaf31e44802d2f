package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/petstorekit/petstore/httpx"
	"github.com/petstorekit/petstore/internal/testenv"
)

// scrape reads url's metrics in the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// value returns the value of the family's series with exactly labels, or
// -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func do(t *testing.T, method, url, key, idemKey, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	req.Header.Set("User-Agent", "observe-test/1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestMetricsAfterRequests scrapes /metrics of a real server after real
// requests to the API and the dashboard and checks the counts.
func TestMetricsAfterRequests(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free"}, nil)
	want := func(code, got int) {
		t.Helper()
		if got != code {
			t.Fatalf("status %d, want %d", got, code)
		}
	}
	for range 3 {
		want(200, do(t, "GET", s.base+"/v1/pets?limit=2", freeKey, "", ""))
	}
	want(401, do(t, "GET", s.base+"/v1/pets/7", "wrong", "", ""))
	want(401, do(t, "GET", s.base+"/v1/pets/8", "", "", ""))
	want(404, do(t, "GET", s.base+"/v1/nowhere", freeKey, "", ""))
	want(401, do(t, "GET", s.base+"/dashboard/api/domains", "", "", ""))
	body := `{"name":"Rex","categoryId":1,"status":"available"}`
	want(201, do(t, "POST", s.base+"/v1/pets", freeKey, "idem-1", body))
	want(201, do(t, "POST", s.base+"/v1/pets", freeKey, "idem-1", body)) // replayed

	fams := scrape(t, s.base+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"petstore_http_requests_total", map[string]string{"route": "/v1/pets", "method": "GET", "code": "200"}, 3},
		{"petstore_http_requests_total", map[string]string{"route": "/v1/pets/{petId}", "method": "GET", "code": "401"}, 2},
		{"petstore_http_requests_total", map[string]string{"route": "unmatched", "method": "GET", "code": "404"}, 1},
		{"petstore_http_requests_total", map[string]string{"route": "/dashboard/api/domains", "method": "GET", "code": "401"}, 1},
		{"petstore_http_requests_total", map[string]string{"route": "/v1/pets", "method": "POST", "code": "201"}, 2},
		{"petstore_http_request_duration_seconds", map[string]string{"route": "/v1/pets", "method": "GET"}, 3},
		// Allowed: 3 lists, the 404, 2 posts by the key, the 3 refused
		// attempts charged to the address's budget, and this scrape.
		{"petstore_ratelimit_decisions_total", map[string]string{"result": "allowed"}, 10},
		{"petstore_ratelimit_decisions_total", map[string]string{"result": "limited"}, 0},
		{"petstore_idempotency_replays_total", nil, 1},
		{"petstore_limiter_store_up", nil, 1},
		{"petstore_domains", map[string]string{"state": "active"}, 0},
		{"petstore_http_requests_in_flight", nil, 1}, // the scrape itself
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(fams, "petstore_store_errors_total", map[string]string{"cause": "timeout"}); got != 0 {
		t.Errorf("store errors (timeout) = %v, want 0", got)
	}
}

// TestMetricsAddr serves /metrics on its own listener, and not on the
// platform hosts.
func TestMetricsAddr(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-metrics-addr", "127.0.0.1:0"}, nil)
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if m == nil {
		t.Fatalf("no metrics address printed:\n%s", strings.Join(s.printed, "\n"))
	}
	want := func(code, got int) {
		t.Helper()
		if got != code {
			t.Fatalf("status %d, want %d", got, code)
		}
	}
	want(200, do(t, "GET", s.base+"/v1/pets", freeKey, "", ""))
	want(404, do(t, "GET", s.base+"/metrics", "", "", ""))
	if got := value(scrape(t, m[1]), "petstore_http_requests_total", map[string]string{"route": "/v1/pets", "method": "GET", "code": "200"}); got != 1 {
		t.Fatalf("requests on the metrics listener = %v, want 1", got)
	}
}

// TestAccessLog checks that the log goes to stderr, never stdout, with
// the fields an operator asks about, also on a 401.
func TestAccessLog(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-log-format", format}, nil)
			if code := do(t, "GET", s.base+"/v1/pets/9?secret=hunter2", "wrong", "", ""); code != 401 {
				t.Fatalf("status %d", code)
			}
			if code := do(t, "GET", s.base+"/v1/pets", freeKey, "", ""); code != 200 {
				t.Fatalf("status %d", code)
			}
			s.stop()
			logs := s.logs.String()
			fields := []string{`client=127.0.0.1`, `method=GET`, `route="GET /v1/pets/{petId}"`, `path=/v1/pets/9`, `status=401`, `user_agent=observe-test/1`, `request_id=`}
			keyed := []string{`route="GET /v1/pets"`, `status=200`, `key_id=`, `bytes=`}
			if format == "json" {
				fields = []string{`"client":"127.0.0.1"`, `"method":"GET"`, `"route":"GET /v1/pets/{petId}"`, `"path":"/v1/pets/9"`, `"status":401`, `"user_agent":"observe-test/1"`, `"request_id":`}
				keyed = []string{`"route":"GET /v1/pets"`, `"status":200`, `"key_id":`, `"bytes":`}
			}
			var unauth, ok string
			for l := range strings.Lines(logs) {
				switch {
				case strings.Contains(l, "/v1/pets/9"):
					unauth = l
				case strings.Contains(l, "GET /v1/pets") && strings.Contains(l, "200"):
					ok = l
				}
			}
			for _, f := range fields {
				if !strings.Contains(unauth, f) {
					t.Errorf("401 line lacks %s:\n%s", f, unauth)
				}
			}
			for _, f := range keyed {
				if !strings.Contains(ok, f) {
					t.Errorf("200 line lacks %s:\n%s", f, ok)
				}
			}
			if strings.Contains(logs, "hunter2") {
				t.Error("the query was logged")
			}
			out := strings.Join(s.printed, "\n") + s.stdout.String()
			if strings.Contains(out, "request_id") || strings.Contains(out, "level") {
				t.Errorf("log lines on stdout:\n%s", out)
			}
		})
	}
}

// TestShutdownSaysInFlight holds one request open (its body not yet
// sent), shuts down, and checks the server says it drains it.
func TestShutdownSaysInFlight(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free"}, nil)
	pw, done := holdCreate(s.base, "") // the handler now waits for the rest
	// Polled with until's pause: a scrape within a second of the last
	// reads its copy again, and a loop without one spent the probes'
	// budget (600 a minute) on a machine slow to run the create.
	until(t, 10*time.Second, "the held request in flight", func() bool {
		return value(scrape(t, s.base+"/metrics"), "petstore_http_requests_in_flight", nil) == 2 // and the scrape
	})
	stopped := make(chan struct{})
	go func() { s.stop(); close(stopped) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.stdout.String(), "draining"); {
		if time.Now().After(deadline) {
			t.Fatalf("no drain message; stdout:\n%s", s.stdout.String())
		}
		time.Sleep(10 * time.Millisecond) // polling for the outcome
	}
	if out := s.stdout.String(); !strings.Contains(out, "draining 1 request in flight") {
		t.Fatalf("drain message: %q", out)
	}
	pw.Write([]byte(`"Rex","categoryId":1,"status":"sold"}`))
	pw.Close()
	if code := <-done; code != 201 {
		t.Fatalf("the drained request got %d, want 201", code)
	}
	<-stopped
}

// TestSecondSignalKeepsTheLog: a second signal during the drain exits at
// once, but the access-log lines of the requests answered by then are
// written out first, not lost with the log's buffer. With -log-format
// json, the line saying why the server exits is JSON too, as every line
// on stderr is (docs/operating.md#logs).
func TestSecondSignalKeepsTheLog(t *testing.T) {
	t.Parallel()
	bin := builds.Build(t, ".")
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", "memory", "-keys", freeKey+":free", "-log-format", format)
			cmd.Env = serverEnv()
			p := testenv.StartListening(t, cmd)
			base := strings.TrimSuffix(p.Addr, "/v1")
			answered, answeredDone := holdCreate(base, "second-signal-answered")
			held, _ := holdCreate(base, "second-signal-held")
			defer held.Close()
			until(t, 10*time.Second, "both creates in flight", func() bool {
				return value(scrape(t, base+"/metrics"), "petstore_http_requests_in_flight", nil) == 3 // and the scrape
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			p.Stdout.WaitFor(t, "draining 2 requests in flight")
			answered.Write([]byte(`"Rex","categoryId":1}`))
			answered.Close()
			if code := <-answeredDone; code != 201 {
				t.Fatalf("the create answered during the drain: %d, want 201", code)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			p.Stderr.WaitFor(t, "exiting without waiting")
			p.Stop() // waits for the exit and the rest of the output
			logs := p.Stderr.String()
			if !strings.Contains(logs, "second-signal-answered") {
				t.Fatalf("no access-log line for the create answered before the second signal:\n%s", logs)
			}
			if format != "json" {
				return
			}
			for l := range strings.Lines(logs) {
				if !json.Valid([]byte(l)) {
					t.Errorf("not a JSON line: %s", l)
				}
			}
		})
	}
}

// waitTick pauses between two polls of an outcome.
func waitTick() { time.Sleep(10 * time.Millisecond) }

// freeKey is a Free -keys key for the operator tests.
const freeKey = "psk_free_Zq4Xw8Lm2Rt6Vn9Hc3Kp"

// TestTraceFile runs the server with -trace-file and reads the spans it
// wrote once it stopped: the request's server span, named after its
// route, with its authentication, rate-limit and store spans as children
// in the same trace.
func TestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.json")
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-trace-file", path}, nil)
	if code := do(t, "GET", s.base+"/v1/pets?limit=3", freeKey, "", ""); code != 200 {
		t.Fatalf("status %d", code)
	}
	s.stop() // flushes the batched spans
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type span struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	var spans []span
	for dec := json.NewDecoder(f); ; {
		var s span
		if err := dec.Decode(&s); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		spans = append(spans, s)
	}
	var server *span
	for i := range spans {
		if spans[i].Name == "GET /v1/pets" {
			server = &spans[i]
		}
	}
	if server == nil {
		t.Fatalf("no span GET /v1/pets among %d", len(spans))
	}
	var route string
	for _, a := range server.Attributes {
		if a.Key == "http.route" {
			route, _ = a.Value.Value.(string)
		}
	}
	if route != "/v1/pets" {
		t.Errorf("http.route = %q, want /v1/pets", route)
	}
	children := map[string]bool{}
	for _, s := range spans {
		if s.Parent.SpanID == server.SpanContext.SpanID && s.SpanContext.TraceID == server.SpanContext.TraceID {
			children[s.Name] = true
		}
	}
	for _, name := range []string{"Authenticator.Authenticate", "RateLimiter.Decide", "PetService.ListPets"} {
		if !children[name] {
			t.Errorf("no child span %s of the request's (children: %v)", name, children)
		}
	}
}

// TestTraceFileRecordsEveryRequest: a caller's traceparent joins its
// trace but does not decide whether the request is recorded: one whose
// sampled flag is off is in the trace file too, so no client can hide
// its requests from the operator.
func TestTraceFileRecordsEveryRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.json")
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-trace-file", path}, nil)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, flags := range []string{"00", "01"} {
		req, _ := http.NewRequest("GET", s.base+"/v1/pets", nil)
		req.Header.Set("Authorization", "Bearer "+freeKey)
		req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-"+flags)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("traceparent flags %s: status %d", flags, res.StatusCode)
		}
	}
	s.stop() // flushes the batched spans
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for dec := json.NewDecoder(strings.NewReader(string(b))); ; {
		var span struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := dec.Decode(&span); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if span.Name == "GET /v1/pets" && span.SpanContext.TraceID == traceID {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d server spans in the caller's trace, want 2: one per request, sampled by the caller or not", n)
	}
}

// TestSnapshotBoundsTheWork (issue 26): however many requests arrive,
// the handler behind a snapshot (a database ping, a scrape's queries)
// runs at most once per period, and a request after the period sees a
// fresh answer.
func TestSnapshotBoundsTheWork(t *testing.T) {
	var runs atomic.Int32
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newSnapshot(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "run %d", n)
	}), time.Second, clock)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if code, body := get(); code != 503 || body != "run 1" {
				t.Errorf("%d %q, want the first run's 503", code, body)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	now = now.Add(999 * time.Millisecond)
	mu.Unlock()
	if _, body := get(); body != "run 1" || runs.Load() != 1 {
		t.Fatalf("within the second: %q after %d runs, want run 1 after 1", body, runs.Load())
	}
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	if _, body := get(); body != "run 2" {
		t.Fatalf("after the second: %q, want a fresh run", body)
	}
}

// TestProbesSpendThePublicBudget (issue 26): /readyz and /metrics are
// rate-limited per address like the OpenAPI document.
func TestProbesSpendThePublicBudget(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free"}, nil)
	limited := 0
	for i := range httpx.DefaultPublicLimits.PerMinute + 5 {
		path := "/readyz"
		if i%2 == 1 {
			path = "/metrics"
		}
		switch code := do(t, "GET", s.base+path, "", "", ""); code {
		case 200:
		case 429:
			limited++
		default:
			t.Fatalf("%s: %d", path, code)
		}
	}
	if limited != 5 {
		t.Fatalf("%d of %d probes refused, want the 5 past the public budget of %d a minute", limited, httpx.DefaultPublicLimits.PerMinute+5, httpx.DefaultPublicLimits.PerMinute)
	}
	if code := do(t, "GET", s.base+"/v1/openapi.json", "", "", ""); code != 429 {
		t.Fatalf("the OpenAPI document after the probes spent the budget: %d, want 429 (one budget)", code)
	}
}

// TestMetricsDuringADatabasePause: with the database (PostgreSQL,
// MariaDB) paused, a scrape still answers within -db-timeout, with the
// counters that tell of the outage; only the metrics read from the
// database (custom domains) are left out.
func TestMetricsDuringADatabasePause(t *testing.T) {
	t.Parallel()
	for _, db := range proxiedDatabases {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			dsn, proxy := db.proxied(t)
			s := startServer(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "1s", "-start-timeout", "30s", "-keys", freeKey + ":free"}, nil)
			if code := do(t, "POST", s.base+"/v1/pets", freeKey, "", `{"name":"Rex","categoryId":1}`); code != 201 {
				t.Fatalf("before the pause: %d", code)
			}
			proxy.Pause()
			defer proxy.Restore()
			if code := do(t, "POST", s.base+"/v1/pets", freeKey, "", `{"name":"Held","categoryId":1}`); code != 503 {
				t.Fatalf("create with the database paused: %d, want 503", code)
			}
			// No scrape came before this one: /metrics has no copy yet,
			// so this one reads afresh, the database included.
			start := time.Now()
			fams := scrape(t, s.base+"/metrics")
			if took := time.Since(start); took > 2500*time.Millisecond {
				t.Fatalf("the scrape took %v with a 1 s -db-timeout", took)
			}
			if got := value(fams, "petstore_store_errors_total", map[string]string{"cause": "timeout"}); got < 1 {
				t.Fatalf("petstore_store_errors_total{cause=timeout} = %v during the pause, want the 503 counted", got)
			}
			if fams["petstore_domains"] != nil {
				t.Fatal("petstore_domains served while the database cannot be read")
			}
		})
	}
}

// TestProbesAnswerWhileRedisIsDownFailingClosed: with
// -ratelimit-fail closed, API requests answer 503 while Redis refuses
// connections, but the probes still answer, through the limiter that
// reports the outage: /readyz names Redis, /metrics says its store is
// down.
func TestProbesAnswerWhileRedisIsDownFailingClosed(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free",
		"-redis", "127.0.0.1:1", "-ratelimit-fail", "closed"}, nil) // nothing listens on port 1
	until(t, 15*time.Second, "API requests answer 503 while Redis refuses connections", func() bool {
		return do(t, "GET", s.base+"/v1/pets", freeKey, "", "") == 503
	})
	res, err := http.Get(s.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct{ Checks map[string]string }
	err = json.NewDecoder(res.Body).Decode(&ready)
	res.Body.Close()
	if res.StatusCode != 503 || err != nil || !strings.HasPrefix(ready.Checks["redis"], "unreachable") {
		t.Fatalf("/readyz: %d %+v %v, want 503 naming Redis unreachable", res.StatusCode, ready, err)
	}
	if got := value(scrape(t, s.base+"/metrics"), "petstore_limiter_store_up", nil); got != 0 {
		t.Fatalf("petstore_limiter_store_up = %v, want 0", got)
	}
}

// TestProbesAreMeasuredAndLogged: /readyz and /metrics requests are in
// petstore_http_requests_total and the limiter's decisions, and each one
// has an access log line, on the platform hosts and on -metrics-addr.
func TestProbesAreMeasuredAndLogged(t *testing.T) {
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free"}, nil)
	if code := do(t, "GET", s.base+"/readyz", "", "", ""); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	fams := scrape(t, s.base+"/metrics")
	if got := value(fams, "petstore_http_requests_total", map[string]string{"route": "/readyz", "method": "GET", "code": "200"}); got != 1 {
		t.Fatalf("/readyz requests counted: %v, want 1", got)
	}
	if got := value(fams, "petstore_ratelimit_decisions_total", map[string]string{"result": "allowed"}); got < 1 {
		t.Fatalf("allowed decisions: %v, want the probe's", got)
	}

	m := startServer(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-metrics-addr", "127.0.0.1:0"}, nil)
	u := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(strings.Join(m.printed, "\n"))
	if u == nil {
		t.Fatalf("no metrics address printed:\n%s", strings.Join(m.printed, "\n"))
	}
	scrape(t, u[1])
	until(t, 5*time.Second, "an access log line for the scrape on -metrics-addr", func() bool {
		return strings.Contains(m.logs.String(), "path=/metrics")
	})
}

// holdCreate sends a create to the server at base whose body waits for
// the returned writer: only its first bytes are sent, so the handler is in
// flight until the test writes the rest and closes it. done receives the
// answer's status, or 0 when none came. requestID, if set, is sent as
// X-Request-Id.
func holdCreate(base, requestID string) (*io.PipeWriter, chan int) {
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", base+"/v1/pets", pr)
	req.Header.Set("Authorization", "Bearer "+freeKey)
	req.Header.Set("Content-Type", "application/json")
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	done := make(chan int, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	pw.Write([]byte(`{"name":`))
	return pw, done
}
