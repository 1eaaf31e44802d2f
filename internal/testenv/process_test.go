package testenv_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

func TestStartListening(t *testing.T) {
	cmd := exec.Command("sh", "-c", `echo starting; echo "note" >&2; echo "app: listening on http://127.0.0.1:9/v1 (docs)"; exec sleep 60`)
	addr, stderr := testenv.StartListening(t, cmd)
	if addr != "http://127.0.0.1:9/v1" {
		t.Fatalf("address %q, want the first word after 'listening on '", addr)
	}
	if !strings.Contains(stderr.String(), "note") {
		t.Fatalf("stderr not collected: %q", stderr.String())
	}
	// Cleanup sends SIGTERM; sleep exits on it, so the test ends at once.
}
