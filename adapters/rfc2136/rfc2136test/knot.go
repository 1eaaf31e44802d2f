// Package rfc2136test starts a real Knot DNS server (knotd) for tests of
// code that writes DNS through RFC 2136, and returns a provider for it.
package rfc2136test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/petstorekit/petstore/adapters/rfc2136"
	"github.com/petstorekit/petstore/internal/testenv"
)

// KeyName is the TSIG key name the started server trusts.
const KeyName = "petstore-test-key."

// Knot is a running knotd.
type Knot struct {
	// Addr is "127.0.0.1:PORT", UDP and TCP.
	Addr string
	// Secret is the base64 TSIG secret (hmac-sha256) of KeyName.
	Secret string
	// Dir holds the configuration, zone files and databases.
	Dir string
}

// Provider returns a new rfc2136 provider for k.
func (k *Knot) Provider() *rfc2136.Provider {
	return &rfc2136.Provider{Server: k.Addr, KeyName: KeyName, KeyAlgorithm: "hmac-sha256", KeySecret: k.Secret}
}

// StartKnot starts knotd on a free loopback port, serving zones (each with
// an SOA and an NS record only) and allowing updates and transfers signed
// with a fresh TSIG key. knotd is killed when tb's test ends. Without knotd
// on PATH (or in /usr/sbin) the test is skipped, or fails when
// PETSTORE_TEST_REQUIRE_SERVICES=1.
func StartKnot(tb testing.TB, zones ...string) *Knot {
	tb.Helper()
	bin := testenv.Program(tb, "knotd", "knot")
	secretBytes := make([]byte, 32)
	rand.Read(secretBytes)
	k := &Knot{Secret: base64.StdEncoding.EncodeToString(secretBytes), Dir: tb.TempDir()}

	var lastErr error
	for range 5 { // the free port can be taken between probing and knotd binding it
		port, err := testenv.FreePort()
		if err != nil {
			tb.Fatalf("rfc2136test: %v", err)
		}
		k.Addr = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
		if lastErr = k.start(tb, bin, port, zones); lastErr == nil {
			return k
		}
	}
	tb.Fatalf("rfc2136test: knotd did not start: %v", lastErr)
	return nil
}

// Installed reports whether knotd can be found, so a test that also runs
// other backends can leave Knot out instead of skipping altogether.
func Installed() bool { return testenv.LookPath("knotd") != "" }

func (k *Knot) start(tb testing.TB, bin string, port int, zones []string) error {
	dir, err := os.MkdirTemp(k.Dir, "knot")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o700); err != nil {
		return err
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, `server:
    rundir: "%[1]s"
    listen: 127.0.0.1@%[2]d
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1

log:
  - target: stderr
    any: info

database:
    storage: "%[1]s/db"

key:
  - id: %[3]s
    algorithm: hmac-sha256
    secret: %[4]s

acl:
  - id: petstore
    key: %[3]s
    action: [update, transfer]

template:
  - id: default
    storage: "%[1]s"
    file: "%%s.zone"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: changes
    semantic-checks: off
    acl: petstore

zone:
`, dir, port, KeyName, k.Secret)
	for _, z := range zones {
		z = dns.CanonicalName(z)
		fmt.Fprintf(&conf, "  - domain: %s\n", z)
		zoneFile := fmt.Sprintf("$ORIGIN %[1]s\n$TTL 3600\n@ SOA ns1.%[1]s hostmaster.%[1]s 1 3600 600 86400 60\n@ NS ns1.%[1]s\n", z)
		if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(z, ".")+".zone"), []byte(zoneFile), 0o600); err != nil {
			return err
		}
	}
	confPath := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o600); err != nil {
		return err
	}
	stderr := new(testenv.Buffer)
	cmd := exec.Command(bin, "-c", confPath)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	// Poll until every zone answers its SOA; knotd loads zones after it
	// starts listening.
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("knotd exited: %v: %s", err, stderr.String())
		default:
		}
		if k.ready(zones) {
			tb.Cleanup(func() {
				stop()
				if tb.Failed() {
					tb.Logf("knotd log:\n%s", stderr.String())
				}
			})
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("knotd not answering on %s: %s", k.Addr, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (k *Knot) ready(zones []string) bool {
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	for _, z := range zones {
		m := new(dns.Msg)
		m.SetQuestion(dns.CanonicalName(z), dns.TypeSOA)
		resp, _, err := c.Exchange(m, k.Addr)
		if err != nil || resp.Rcode != dns.RcodeSuccess || len(resp.Answer) == 0 {
			return false
		}
	}
	return true
}
