package webhook_test

import (
	"flag"
	"os"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

// TestMain runs four of the parallel tests at once on a machine with
// fewer cores (testenv.RaiseParallel): they wait on receivers, leases and
// fault proxies' paused links far more than they compute.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.RaiseParallel(4)
	os.Exit(m.Run())
}
