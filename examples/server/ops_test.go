package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/testenv"
)

// TestShutdownDrainsTheMetricsListener holds a scrape on -metrics-addr
// open (its body not yet sent: the server answers once it has read it)
// and shuts down: the scrape is answered, as a request to -addr would
// be, not cut.
func TestShutdownDrainsTheMetricsListener(t *testing.T) {
	t.Parallel()
	bin := builds.Build(t, ".")
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-db", "memory", "-keys", freeKey+":free")
	cmd.Env = serverEnv()
	p := testenv.StartListening(t, cmd)
	m := regexp.MustCompile(`metrics at http://(\S+)/metrics`).FindStringSubmatch(p.Stdout.String())
	if m == nil {
		t.Fatalf("no metrics address printed:\n%s", p.Stdout)
	}
	conn, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A HEAD's answer has no body, so the handler returns (and logs the
	// request) at once; the server then reads the request's body before
	// it sends the answer.
	if _, err := conn.Write([]byte("HEAD /metrics HTTP/1.1\r\nHost: " + m[1] + "\r\nX-Request-Id: held-scrape\r\nContent-Length: 10\r\n\r\n12345")); err != nil {
		t.Fatal(err)
	}
	p.Stderr.WaitFor(t, "request_id=held-scrape")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.Stdout.WaitFor(t, "shutting down")
	if _, err := conn.Write([]byte("67890")); err != nil {
		t.Fatalf("the held scrape was cut: %v", err)
	}
	req, _ := http.NewRequest("HEAD", "/metrics", nil)
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("the held scrape was cut: %v", err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("the held scrape: %s, want 200", res.Status)
	}
	p.Stdout.WaitFor(t, "petstore: stopped")
}

// TestListenFlagsCheckedBeforeTheDemoKey gives a wrong listen address:
// the server refuses it before it creates the database and prints a
// demo key.
func TestListenFlagsCheckedBeforeTheDemoKey(t *testing.T) {
	// A configuration that turns out right serves until the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"-admin-addr", "192.0.2.1:9090"}, // not loopback, and no token
		{"-admin-addr", "127.0.0.1:notaport"},
		{"-metrics-addr", "nonsense"},
		{"-metrics-addr", "127.0.0.1:99999"},
		{"-addr", "127.0.0.1"},
	} {
		path := filepath.Join(t.TempDir(), "demo.db")
		var stdout bytes.Buffer
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0", "-db", "sqlite:" + path}, args...), func(string) string { return "" }, &stdout, &bytes.Buffer{})
		if err == nil {
			t.Errorf("%q: accepted", args)
		}
		if strings.Contains(stdout.String(), "demo API key") {
			t.Errorf("%q: printed a demo key before refusing:\n%s", args, stdout.String())
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%q: created the database before refusing", args)
		}
	}
}

// TestEmptyCNAMETargetIsTheDefault: an empty -cname-target means the default,
// which the engine uses, so the banner names it too.
func TestEmptyCNAMETargetIsTheDefault(t *testing.T) {
	_, printed := start(t, []string{"-addr", "127.0.0.1:0", "-keys", freeKey + ":free", "-cname-target", ""}, nil)
	if out := strings.Join(printed, "\n"); !strings.Contains(out, "customers point CNAMEs at edge.petstore.localhost\n") {
		t.Fatalf("the banner does not name the default CNAME target:\n%s", out)
	}
}

// TestJSONLogOnlyWhenMySQLFails starts the binary with -log-format json
// on a MySQL address that closes every connection: the driver and the
// dialect complain, and the server gives up, all in JSON lines.
func TestJSONLogOnlyWhenMySQLFails(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	bin := builds.Build(t, ".")
	cmd := exec.Command(bin, "-log-format", "json", "-db-timeout", "2s", "-db", "mysql://root@"+ln.Addr().String()+"/petstore")
	cmd.Env = serverEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("the server started on a database that closes every connection")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want the driver's complaint and the server's error, got:\n%s", stderr.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not a JSON line: %s", l)
		}
	}
}

// TestExitStatus runs the binary with malformed command lines, which
// exit with status 2 and say why on stderr (nothing on stdout), before
// the default database is made, and with a command that fails, which
// exits with status 1.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	bin := builds.Build(t, ".")
	db := "sqlite:" + filepath.Join(t.TempDir(), "exit.db")
	notPEM := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ca = "https://127.0.0.1:1/directory"
	for _, tc := range []struct {
		args   []string
		status int
		stderr string // a part of what stderr must hold
	}{
		{[]string{"-nosuch"}, 2, "-platform-hosts"}, // the usage
		{[]string{"-db-timeout", "x"}, 2, "-db-timeout"},
		{[]string{"-start-timeout", "0s"}, 2, "-start-timeout: want a positive duration"},
		{[]string{"-db", "foo"}, 2, "-db"},
		{[]string{"-db", "sqlite:"}, 2, "-db"},
		{[]string{"-redis", "::bad::"}, 2, "-redis"},
		{[]string{"-ratelimit-fail", "closed"}, 2, "needs -redis"},
		// Values that only the driver or the ACME issuer would read: they
		// too are refused before the default database is made.
		{[]string{"-db", "postgres://u@127.0.0.1:99999/db"}, 2, "-db"},
		{[]string{"-db", "postgres://u@127.0.0.1:1/db?sslmode=bogus"}, 2, "sslmode"},
		{[]string{"-acme-ca", ca, "-acme-root", "/nonexistent/roots.pem"}, 2, "-acme-root"},
		{[]string{"-acme-ca", ca, "-acme-root", notPEM}, 2, "-acme-root"},
		{[]string{"-cdn-ranges", "/nonexistent"}, 2, "-cdn-ranges"},
		{[]string{"-trace-file", "/nonexistent/spans.json"}, 2, "-trace-file"},
		{[]string{"extra"}, 2, "unexpected arguments"},
		{[]string{"psk_pasted_where_a_command_goes"}, 2, "unexpected arguments"},
		{[]string{"projects", "psk_pasted_where_a_command_goes"}, 2, "projects deploy"},
		{[]string{"-db", "memory", "keys", "list"}, 2, "-db memory"},
		{[]string{"-db", db, "keys", "bogus"}, 2, "keys create"},
		{[]string{"-db", db, "keys", "create", "-nosuch"}, 2, "keys create"},
		{[]string{"-db", db, "projects"}, 2, "projects deploy"},
		{[]string{"-db", db, "projects", "bogus"}, 2, "projects deploy"},
		{[]string{"-db", "memory", "bans", "list"}, 2, "-admin-addr"},
		// keys usage on Redis reads the key's plan from -db: a memory
		// store of its own would know no key.
		{[]string{"-db", "memory", "-redis", "127.0.0.1:1", "keys", "usage", "key_x"}, 2, "-db memory"},
		{[]string{"-db", "memory", "-redis", "127.0.0.1:1", "bans", "bogus"}, 2, "bans lift"},
		// The default database, ./petstore.db, must not be made for a
		// command line that is refused.
		{[]string{"bans", "list"}, 2, "-admin-addr"},
		{[]string{"-redis", "127.0.0.1:1", "bans", "bogus"}, 2, "bans lift"},
		{[]string{"-admin-addr", "127.0.0.1:1", "keys", "usage"}, 2, "bans lift"},
		{[]string{"keys"}, 2, "keys create"},
		{[]string{"keys", "bogus"}, 2, "keys create"},
		{[]string{"keys", "create", "-deployed", "-nosuch"}, 2, "keys create"},
		{[]string{"keys", "create", "-plan", "gold"}, 2, "plan must be one of"},
		{[]string{"keys", "set-plan", "key_x", "enterprise"}, 2, "enterprise limits"},
		{[]string{"projects", "bogus"}, 2, "projects deploy"},
		{[]string{"projects", "list", "extra"}, 2, "projects deploy"},
		{[]string{"projects", "deploy"}, 2, "projects deploy"},
		{[]string{"-db", db, "keys", "revoke", "key_nosuch"}, 1, "no key has the id given"},         // never what was typed: it may be a secret
		{[]string{"-db", db, "projects", "deploy", "prj_nosuch"}, 1, "no project has the id given"}, // as keys revoke
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = serverEnv()
		cmd.Dir = t.TempDir()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, serr := os.Stat(filepath.Join(cmd.Dir, "petstore.db")); tc.status == 2 && serr == nil {
			t.Errorf("%q: made the default database before refusing the command line", tc.args)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("%q: %v, want exit status %d", tc.args, err, tc.status)
			continue
		}
		if got := exit.ExitCode(); got != tc.status {
			t.Errorf("%q: exit status %d, want %d\nstderr: %s", tc.args, got, tc.status, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote to stdout: %s", tc.args, stdout.String())
		}
		if !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: stderr does not say %q:\n%s", tc.args, tc.stderr, stderr.String())
		}
		// What was typed may be a secret pasted in the wrong place.
		if strings.Contains(stderr.String(), "psk_") {
			t.Errorf("%q: stderr quotes what was typed:\n%s", tc.args, stderr.String())
		}
	}
	for _, args := range [][]string{{"-h"}, {"keys", "-h"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = serverEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "usage") || stderr.Len() != 0 {
			t.Errorf("%q: %v, want success and the usage on stdout only\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
		}
	}
}
