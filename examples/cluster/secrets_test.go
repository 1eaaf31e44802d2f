package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpShowsNoSecret: -h prints every flag's default, which is the
// value of its environment variable; secrets show only redacted.
func TestHelpShowsNoSecret(t *testing.T) {
	env := map[string]string{
		"PETSTORE_API_KEYS": "psk_PLANTEDapiKEY7rT2mX9qL4vB8nZ3:pro",
		"PETSTORE_DB":       "postgres://app:PLANTEDdbPASS@127.0.0.1:5432/petstore",
		"PETSTORE_REDIS":    "redis://:PLANTEDredisPASS@127.0.0.1:6379/0",
	}
	// The flag set prints its usage to os.Stderr.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	_, err = parseConfig([]string{"-h"}, func(k string) string { return env[k] })
	os.Stderr = stderr
	w.Close()
	var out bytes.Buffer
	io.Copy(&out, r)
	if err != flag.ErrHelp {
		t.Fatalf("-h: %v", err)
	}
	if strings.Contains(out.String(), "PLANTED") {
		t.Errorf("-h shows a planted secret:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "app:xxxxx@127.0.0.1") {
		t.Errorf("-h does not show the redacted -db:\n%s", out.String())
	}
}

// TestHelpIsASuccess: -h prints the usage and exits 0, as examples/server
// does, without an error line.
func TestHelpIsASuccess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(builds.Build(t, "."), "-h")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-redis-prefix") || strings.Contains(string(out), "help requested") {
		t.Fatalf("-h: %v\n%s", err, out)
	}
}

// TestExitStatus: a malformed command line exits with status 2, as
// examples/server's does, saying why on stderr.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	bin := builds.Build(t, ".")
	for _, args := range [][]string{{"-nosuch"}, {"-redis", "127.0.0.1:1"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "PETSTORE_DB=", "PETSTORE_REDIS=", "PETSTORE_API_KEYS=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "cluster: ") {
			t.Errorf("%q: %v, want exit status 2 and the error on stderr only\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
		}
	}
}
