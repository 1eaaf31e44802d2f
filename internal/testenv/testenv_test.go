package testenv_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/testenv"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of
// stopping, so the test can see which of the two Require chose.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestService(t *testing.T) {
	for _, tc := range []struct {
		name, value, require  string
		want, skipped, failed string
	}{
		{"Set", "redis://127.0.0.1:6379/0", "", "redis://127.0.0.1:6379/0", "", ""},
		{"SetAndRequired", "redis://127.0.0.1:6379/0", "1", "redis://127.0.0.1:6379/0", "", ""},
		{"UnsetSkips", "", "", "", "PETSTORE_TEST_REDIS is unset; set it (e.g. PETSTORE_TEST_REDIS=redis://127.0.0.1:6379/0) to run this test", ""},
		{"UnsetRequiredFails", "", "1", "", "", "PETSTORE_TEST_REDIS is unset, and PETSTORE_TEST_REQUIRE_SERVICES=1 makes that a failure; set it (e.g. PETSTORE_TEST_REDIS=redis://127.0.0.1:6379/0) to run this test"},
		{"OnlyOneRequires", "", "true", "", "PETSTORE_TEST_REDIS is unset; set it (e.g. PETSTORE_TEST_REDIS=redis://127.0.0.1:6379/0) to run this test", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(testenv.RedisEnv, tc.value)
			t.Setenv(testenv.RequireServicesEnv, tc.require)
			r := &recorder{TB: t}
			if got := testenv.RedisURL(r); got != tc.want {
				t.Errorf("RedisURL = %q, want %q", got, tc.want)
			}
			if r.skipped != tc.skipped {
				t.Errorf("skipped with %q, want %q", r.skipped, tc.skipped)
			}
			if r.failed != tc.failed {
				t.Errorf("failed with %q, want %q", r.failed, tc.failed)
			}
		})
	}
}

func TestProgram(t *testing.T) {
	t.Setenv(testenv.RequireServicesEnv, "")
	if p := testenv.Program(t, "sh", "dash"); !strings.HasSuffix(p, "/sh") {
		t.Fatalf("Program(sh) = %q, want a path ending in /sh", p)
	}
	r := &recorder{TB: t}
	if p := testenv.Program(r, "petstore-no-such-program", "petstore-pkg"); p != "" {
		t.Fatalf("Program of a missing program = %q, want \"\"", p)
	}
	if want := "petstore-no-such-program is not installed; install Debian's petstore-pkg package (apt-get install -y petstore-pkg) to run this test"; r.skipped != want {
		t.Fatalf("skipped with %q, want %q", r.skipped, want)
	}
}

// TestFreePort: the port is below the ephemeral range, and TCP and UDP
// can both bind it.
func TestFreePort(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port < 10000 || port >= testenv.EphemeralFirst() {
		t.Fatalf("port %d is not below the ephemeral range (from %d)", port, testenv.EphemeralFirst())
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
}
