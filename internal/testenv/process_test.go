package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

func TestStartListening(t *testing.T) {
	// The note goes to stderr before the listening line goes to stdout,
	// but the two pipes are read apart: it may arrive after.
	cmd := exec.Command("sh", "-c", `echo starting; echo "note" >&2; echo "app: listening on http://127.0.0.1:9/v1 (docs)"; exec sleep 60`)
	p := testenv.StartListening(t, cmd)
	if p.Addr != "http://127.0.0.1:9/v1" {
		t.Fatalf("address %q, want the first word after 'listening on '", p.Addr)
	}
	p.Stderr.WaitFor(t, "note")
	p.Stdout.WaitFor(t, "starting")
	// Cleanup sends SIGTERM; sleep exits on it, so the test ends at once.
}

// After Stop, the output is complete, including what the program wrote
// while shutting down; so a test can assert that something was never
// written.
func TestStopCollectsEverything(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sleep 60 & trap 'kill $!; echo "bye" >&2; exit 0' TERM; echo "listening on 127.0.0.1:9"; wait $!`)
	p := testenv.StartListening(t, cmd)
	p.Stop()
	if got := p.Stderr.String(); got != "bye\n" {
		t.Fatalf("stderr after Stop = %q, want the line written at SIGTERM", got)
	}
	if got := p.Stdout.String(); got != "listening on 127.0.0.1:9\n" {
		t.Fatalf("stdout after Stop = %q", got)
	}
	p.Stop() // again: nothing happens
}

// Builds compiles a package once, however many tests ask for it, and
// Remove deletes what it compiled.
func TestBuildsCompilesOnce(t *testing.T) {
	var b testenv.Builds
	bin := b.Build(t, "../../examples/faketest")
	if filepath.Base(bin) != "faketest" {
		t.Fatalf("binary %s, want it named after its package", bin)
	}
	before, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if again := b.Build(t, "../../examples/faketest/"); again != bin {
		t.Fatalf("second Build gave %s, want the first one's %s", again, bin)
	}
	if after, err := os.Stat(bin); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the binary was compiled again (%v)", err)
	}
	b.Remove()
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Fatalf("after Remove, stat %s: %v, want not found", bin, err)
	}
}
