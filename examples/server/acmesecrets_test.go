package main

import (
	"context"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/acme/acmetest"
	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
	"github.com/petstorekit/petstore/adapters/memzone"
)

// TestACMEKeysNeverShown obtains a certificate from a CA (Pebble, in this
// process) and then reads every private key the server stored, the ACME
// account's included, from its database: none of them is in the server's
// output or log, where certmagic's own log lines go too.
func TestACMEKeysNeverShown(t *testing.T) {
	const name = "keys.example.com"
	const key = "psk_Acme7hR2kW9pV4xZ1qM6Tc3"
	zone, dns := memzone.NewTestServer(t, "example.com.", "petstore.example.")
	ctx := context.Background()
	if _, err := zone.AppendRecords(ctx, "petstore.example.", []libdns.Record{
		libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("127.0.0.1")},
	}); err != nil {
		t.Fatal(err)
	}
	httpAddr, httpPort := freeAddr(t)
	tlsAddr, tlsPort := freeAddr(t)
	ca := acmetest.Start(t, acmetest.Options{DNSServer: dns.Addr(), HTTPPort: httpPort, TLSPort: tlsPort})
	dir := t.TempDir()
	root := filepath.Join(dir, "pebble-root.pem")
	if err := os.WriteFile(root, ca.ServerRootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite:" + filepath.Join(dir, "petstore.db")
	s := startServer(t, []string{
		"-addr", httpAddr, "-tls-addr", tlsAddr, "-db", dsn,
		"-acme-ca", ca.DirectoryURL(), "-acme-root", root, "-acme-email", "ops@example.com",
		"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.example",
		"-keys", key + ":pro",
	}, nil)
	api := s.base + "/dashboard/api/domains"
	if status, _, body := call(t, "POST", api, key, "", `{"name":"`+name+`"}`); status != 201 {
		t.Fatalf("add: %d %s", status, body)
	}
	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.CNAME{Name: "keys", TTL: time.Hour, Target: "edge.petstore.example."},
	}); err != nil {
		t.Fatal(err)
	}
	if status, _, body := call(t, "POST", api+"/"+name+"/verify", key, "", ""); status != 200 {
		t.Fatalf("verify: %d %s", status, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, _, body := call(t, "GET", api+"/"+name, key, "", "")
		if strings.Contains(body, `"status":"active"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate after 30 s: %s", body)
		}
	}
	s.stop()
	shown := strings.Join(s.printed, "\n") + s.stdout.String() + s.logs.String()

	db, err := bunopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT blob_key, value FROM blobs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(v)
		if block == nil || !strings.Contains(block.Type, "PRIVATE KEY") {
			continue
		}
		keys = append(keys, string(k))
		// Any run of the key's base64 would give part of it away; the
		// log would hold it whole or in lines, so look for both.
		text := string(v)
		lines := strings.Split(text, "\n")
		for _, l := range lines[1 : len(lines)-2] {
			if len(l) >= 32 && strings.Contains(shown, l) {
				t.Errorf("the server showed part of the private key %s:\n%s", k, shown)
				break
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var account bool
	for _, k := range keys {
		account = account || strings.Contains(k, "users/")
	}
	t.Logf("private keys checked: %q", keys)
	if !account || len(keys) < 2 {
		t.Fatalf("found the private keys %q, want the ACME account's and the certificate's", keys)
	}
}
