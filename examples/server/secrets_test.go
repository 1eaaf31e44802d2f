package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/petstorekit/petstore/adapters/redislimit"
)

// Planted secrets: each test configures the server with some of them and
// then looks for every one in what the server shows.
const (
	plantedKey      = "psk_PLANTEDapiKEY7rT2mX9qL4vB8nZ3" // an operator's API key (-keys)
	plantedWrongKey = "psk_PLANTEDwrongKEY5hJ2kP8wQ1xC6"  // a client's wrong key
	plantedDBPass   = "PLANTEDdbPASS"
	plantedRedis    = "PLANTEDredisPASS"
	plantedTSIG     = "UExBTlRFRHRzaWcv/SECRET+Zm9vYmFy" // base64, "/" and "+" included
)

var planted = []string{plantedKey, plantedWrongKey, plantedDBPass, plantedRedis, plantedTSIG, "PLANTED"}

// noSecret fails the test if text holds any planted secret.
func noSecret(t *testing.T, channel, text string) {
	t.Helper()
	for _, s := range planted {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the planted secret %q:\n%s", channel, s, text)
			return
		}
	}
}

// secretEnv is an environment holding a secret in every variable that
// may carry one.
func secretEnv(db string) map[string]string {
	return map[string]string{
		"PETSTORE_API_KEYS":     plantedKey + ":pro",
		"PETSTORE_DB":           db,
		"PETSTORE_REDIS":        "redis://:" + plantedRedis + "@127.0.0.1:1/0",
		"PETSTORE_DNS_PROVIDER": "rfc2136://petstore-update:" + plantedTSIG + "@127.0.0.1:1?alg=hmac-sha256&zones=example.com",
	}
}

// TestHelpShowsNoSecret: -h prints every flag's default, which is the
// value of its environment variable.
func TestHelpShowsNoSecret(t *testing.T) {
	for _, db := range []string{
		"postgres://app:" + plantedDBPass + "@127.0.0.1:5432/petstore?sslmode=disable",
		"host=127.0.0.1 user=app password=" + plantedDBPass + " dbname=petstore", // PostgreSQL's keyword/value form
	} {
		helpShowsNoSecret(t, secretEnv(db))
	}
	// Secrets in the query of a value that is no URL: a Redis host:port
	// and a SQLite path.
	env := secretEnv("sqlite:petstore.db?_auth_user=app&_auth_pass=" + plantedDBPass)
	env["PETSTORE_REDIS"] = "127.0.0.1:6379?password=" + plantedRedis
	helpShowsNoSecret(t, env)
}

func helpShowsNoSecret(t *testing.T, env map[string]string) {
	t.Helper()
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"keys", "-h"}} {
		var out bytes.Buffer
		_, err := parseConfig(args, func(k string) string { return env[k] }, &out)
		if err == nil {
			t.Fatalf("parseConfig(%q) succeeded", args)
		}
		noSecret(t, "the usage of "+strings.Join(args, " "), out.String())
		noSecret(t, "the error of "+strings.Join(args, " "), err.Error())
		if args[0] == "-h" && !strings.Contains(out.String(), "xxxxx:pro") {
			t.Errorf("-h does not show that -keys is set, redacted:\n%s", out.String())
		}
	}
}

// TestFlagErrorsShowNoSecret gives each secret-bearing flag a value that
// holds a secret and is wrong, and reads the error the server exits with.
func TestFlagErrorsShowNoSecret(t *testing.T) {
	// A configuration that turns out right serves until the deadline (and
	// fails the test); a cancelled context would be an operator's stop,
	// which ends a start cleanly, before the database could say no.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"-db", "postgres://app:" + plantedDBPass + "%zz@127.0.0.1:5432/petstore"},
		{"-db", "postgres://app:" + plantedDBPass + "@127.0.0.1:1/petstore?sslmode=disable&connect_timeout=1"},
		{"-db", "mysql://root:" + plantedDBPass + "@/test"},
		{"-db", "oracle://app:" + plantedDBPass + "@127.0.0.1/x"},
		{"-db", "host=127.0.0.1 user=app password=" + plantedDBPass + " dbname=petstore"},
		{"-db", "memory", "-redis", "redis://:" + plantedRedis + "@127.0.0.1:badport/0"},
		{"-db", "memory", "-redis", "redis://:" + plantedRedis + "@127.0.0.1:6379/notanumber"},
		{"-db", "memory", "-redis", "user:" + plantedRedis + "@127.0.0.1:6379"},
		{"-db", "memory", "-redis", "127.0.0.1:badport?password=" + plantedRedis},
		{"-db", "memory", "-dns-provider", "rfc2136://k:" + plantedTSIG + "%zz@127.0.0.1:53?zones=example.com"},
		{"-db", "memory", "-dns-provider", "rfc2136://k:" + plantedTSIG + "@127.0.0.1?zones=example.com"},
		{"-db", "memory", "-dns-provider", "rfc2136://k:" + plantedTSIG + "@127.0.0.1:53"},
		{"-db", "memory", "-keys", plantedKey + ":platinum"},
		{"-db", "memory", "-keys", plantedKey + ":pro," + plantedKey + ":free"},
		{"-db", "memory", "-keys", "PLANTEDshort:pro"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(ctx, args, func(string) string { return "" }, &stdout, &stderr)
		if err == nil {
			t.Errorf("run(%q) succeeded", args)
			continue
		}
		noSecret(t, "the error of "+strings.Join(args, " "), err.Error())
		noSecret(t, "the output of "+strings.Join(args, " "), stdout.String()+stderr.String())
	}
}

// TestServingShowsNoSecret runs a server configured with every secret,
// whose Redis is down (so its limiter logs an outage) and which is sent
// a wrong key, and reads everything it shows: its output and log, its
// traces, its metrics, its health and readiness answers, the admin
// endpoint's answers and the API's answers.
func TestServingShowsNoSecret(t *testing.T) {
	db := "memory"
	if pg := os.Getenv("PETSTORE_TEST_POSTGRES"); pg != "" {
		// The test server trusts loopback, so any password is accepted
		// and travels the whole way to the driver.
		u, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(u.User.Username(), plantedDBPass)
		db = u.String()
	}
	// What goes to the process's default loggers (package log, slog's
	// default, go-redis's) is part of the log too.
	var process syncBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&process, nil)))
	defer log.SetOutput(log.Writer())
	log.SetOutput(&process)
	redis.SetLogger(processLogger{&process})
	defer redis.SetLogger(redislimit.QuietLogger{})
	traces := filepath.Join(t.TempDir(), "spans.json")
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-trace-file", traces}, secretEnv(db))
	admin := regexp.MustCompile(`operator endpoint at (http://\S+)/admin/`).FindStringSubmatch(strings.Join(s.printed, "\n"))
	if admin == nil {
		t.Fatalf("no operator endpoint printed:\n%s", strings.Join(s.printed, "\n"))
	}
	var answers strings.Builder
	fetch := func(method, url, key, body string) int {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		res.Header.Write(&answers)
		answers.Write(b)
		answers.WriteString("\n")
		return res.StatusCode
	}
	if code := fetch("GET", s.base+"/v1/pets", plantedKey, ""); code != 200 {
		t.Fatalf("GET /v1/pets with the operator's key: %d", code)
	}
	if code := fetch("POST", s.base+"/v1/pets", plantedKey, `{"name":"`+plantedWrongKey+`x","categoryId":"one"}`); code != 400 {
		t.Fatalf("POST with a bad body: %d", code)
	}
	if code := fetch("GET", s.base+"/v1/pets", plantedWrongKey, ""); code != 401 {
		t.Fatalf("GET /v1/pets with a wrong key: %d", code)
	}
	fetch("GET", s.base+"/healthz", "", "")
	fetch("GET", s.base+"/readyz", "", "")
	fetch("GET", admin[1]+"/admin/bans", "", "")
	id := regexp.MustCompile(`key_id=(\S+)`).FindStringSubmatch(waitLog(t, s, "key_id="))
	fetch("GET", admin[1]+"/admin/keys/"+id[1]+"/usage", "", "")
	fetch("DELETE", admin[1]+"/admin/bans/"+id[1], "", "")
	metrics := &strings.Builder{}
	{
		res, err := http.Get(s.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(metrics, res.Body)
		res.Body.Close()
		if !strings.Contains(metrics.String(), "petstore_http_requests_total") {
			t.Fatalf("no metrics served:\n%s", metrics)
		}
	}
	waitLog(t, s, "status=401")
	s.stop() // flushes the log and the traces
	spans, err := os.ReadFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(spans, []byte("GET /v1/pets")) {
		t.Fatalf("no request span traced:\n%s", spans)
	}
	noSecret(t, "what the server printed", strings.Join(s.printed, "\n")+"\n"+s.stdout.String())
	noSecret(t, "the log", s.logs.String())
	noSecret(t, "the process's default loggers", process.String())
	if !strings.Contains(process.String()+s.logs.String(), "127.0.0.1:1") {
		t.Errorf("nothing logged the failing Redis; is the log captured?\nlog:\n%s\nprocess:\n%s", s.logs.String(), process.String())
	}
	noSecret(t, "the trace file", string(spans))
	noSecret(t, "the metrics", metrics.String())
	// The body of the POST carried a planted string on purpose, to show
	// that no answer echoes a request's data either.
	noSecret(t, "the answers (API, health, readiness, admin endpoint)", answers.String())
}

// processLogger is a go-redis logger writing to w.
type processLogger struct{ w io.Writer }

func (l processLogger) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(l.w, format+"\n", v...)
}
