package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/petstorekit/petstore/adapters/acme/acmetest"
	"github.com/petstorekit/petstore/adapters/memzone"
	"github.com/petstorekit/petstore/adapters/rfc2136/rfc2136test"
	"github.com/petstorekit/petstore/internal/testenv"
)

// freeAddr returns a loopback address with a port free right now
// (testenv.FreePort). The server and Pebble must agree on the ports before
// either starts: Pebble validates HTTP-01 on -addr's port and TLS-ALPN-01
// on -tls-addr's.
func freeAddr(t *testing.T) (string, int) {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port
}

// With -acme-ca and -tls-addr, a custom domain added and verified on the
// dashboard API gets its certificate by itself from the CA (a Pebble in
// this process, validating against a real DNS server), the HTTPS listener
// serves the project's site for it with a certificate chaining to the CA's
// root, and removing the domain stops the very next TLS handshake.
func TestCustomDomainHTTPS(t *testing.T) {
	const name = "shop.example.com"
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
	root := filepath.Join(t.TempDir(), "pebble-root.pem")
	if err := os.WriteFile(root, ca.ServerRootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := start(t, []string{
		"-addr", httpAddr, "-tls-addr", tlsAddr,
		"-acme-ca", ca.DirectoryURL(), "-acme-root", root, "-acme-email", "ops@example.com",
		"-dns-resolvers", dns.Addr(), "-cname-target", "edge.petstore.example",
		"-keys", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k:pro",
	}, nil)

	type domainView struct {
		Status      string `json:"status"`
		Reason      string `json:"reason"`
		Certificate struct {
			Status string `json:"status"`
			Issuer string `json:"issuer"`
		} `json:"certificate"`
		History []struct{ Status string } `json:"history"`
	}
	dashboard := func(method, path, reqBody string) (int, domainView, string) {
		t.Helper()
		status, _, body := call(t, method, base+"/dashboard/api/domains"+path, "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "", reqBody)
		var d domainView
		if status == 200 || status == 201 {
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, body)
			}
		}
		return status, d, body
	}

	if status, d, body := dashboard("POST", "", `{"name":"`+name+`"}`); status != 201 || d.Status != "pending" {
		t.Fatalf("add: %d %s", status, body)
	}
	if _, err := zone.AppendRecords(ctx, "example.com.", []libdns.Record{
		libdns.CNAME{Name: "shop", TTL: time.Hour, Target: "edge.petstore.example."},
	}); err != nil {
		t.Fatal(err)
	}
	handshake := func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr,
			&tls.Config{ServerName: name, RootCAs: ca.IssuedRoots()})
		if err == nil {
			conn.Close()
		}
		return err
	}
	// Pending: the on-demand fallback must not obtain a certificate for
	// a name that has not verified.
	if err := handshake(); err == nil {
		t.Fatal("TLS handshake for a pending domain succeeded")
	}
	if n := ca.Requests("/order-plz"); n != 0 {
		t.Fatalf("%d orders before verification, want none", n)
	}
	// The certificate is obtained in the background: the answer is issuing,
	// or already active if the CA was quicker than the rest of the request
	// (the history below shows it went through issuing either way).
	if status, d, body := dashboard("POST", "/"+name+"/verify", ""); status != 200 || (d.Status != "issuing" && d.Status != "active") {
		t.Fatalf("verify: %d %s, want 200 issuing", status, body)
	}
	var d domainView
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var status int
		var body string
		if status, d, body = dashboard("GET", "/"+name, ""); status != 200 {
			t.Fatalf("get: %d %s", status, body)
		}
		if d.Status != "issuing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still issuing after 20 s: %s", body)
		}
	}
	var history []string
	for _, h := range d.History {
		history = append(history, h.Status)
	}
	if d.Status != "active" || d.Certificate.Status != "issued" || d.Certificate.Issuer == "" ||
		strings.Join(history, " ") != "pending verified issuing active" {
		t.Fatalf("domain %+v, want active with an issued certificate after pending verified issuing active", d)
	}

	// A browser reaching the -tls-addr listener as shop.example.com: the
	// name resolves to this machine, and Pebble's root is trusted.
	dialTLS := func() *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, tlsAddr)
			},
			TLSClientConfig:   &tls.Config{RootCAs: ca.IssuedRoots()},
			ForceAttemptHTTP2: true,
			DisableKeepAlives: true,
		}}
	}
	origin := "https://" + name + ":" + strconv.Itoa(tlsPort)
	_, _, plainPage := call(t, "GET", base+"/", "", name, "")
	for _, tc := range []struct {
		path, key, want string
	}{
		{"/", "", "served by the Petstore platform for project"},
		{"/v1/pets", "psk_Pro5jW8cZ1qN6bY3xF7vGu2k", "["}, // the project's (empty) pet list
	} {
		t.Run("https "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest("GET", origin+tc.path, nil)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			res, err := dialTLS().Do(req)
			if err != nil {
				t.Fatalf("HTTPS request for the active domain: %v", err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
				t.Fatalf("GET %s: %d %s, want 200 containing %q", tc.path, res.StatusCode, b, tc.want)
			}
			if tc.path == "/" && string(b) != plainPage {
				t.Fatalf("HTTPS page differs from the project's page over HTTP:\n%s\n---\n%s", b, plainPage)
			}
			if cs := res.TLS; cs == nil || cs.PeerCertificates[0].VerifyHostname(name) != nil {
				t.Fatal("the response did not come over TLS with a certificate for " + name)
			}
		})
	}

	if status, _, body := dashboard("DELETE", "/"+name, ""); status != 204 {
		t.Fatalf("remove: %d %s", status, body)
	}
	if err := handshake(); err == nil {
		t.Fatal("TLS handshake for the removed domain succeeded")
	}
	if status, _, body := dashboard("GET", "/"+name, ""); status != 404 {
		t.Fatalf("get after remove: %d %s, want 404", status, body)
	}
}

// With -acme-dcv-zone naming a zone of -dns-provider (here Knot, written
// through RFC 2136), the dashboard shows the _acme-challenge delegation
// beside the routing record, and once the customer creates it, Verify has
// the certificate obtained by DNS-01 while the routing CNAME still points
// at the old host: the HTTPS listener then answers the name's handshake.
func TestCustomDomainCertificateBeforeCutover(t *testing.T) {
	const name = "www.example.test"
	const dcvZone = "acme.petstore.example"
	zone, dns := memzone.NewTestServer(t, "example.test.", "example.org.", "petstore.example.")
	ctx := context.Background()
	if _, err := zone.AppendRecords(ctx, "petstore.example.", []libdns.Record{
		libdns.Address{Name: "edge", TTL: time.Hour, IP: netip.MustParseAddr("127.0.0.1")},
	}); err != nil {
		t.Fatal(err)
	}
	knot := rfc2136test.StartKnot(t, dcvZone+".")
	resolver := acmetest.Resolver(t, map[string]string{dcvZone: knot.Addr, "": dns.Addr()})
	httpAddr, httpPort := freeAddr(t)
	tlsAddr, tlsPort := freeAddr(t)
	ca := acmetest.Start(t, acmetest.Options{DNSServer: resolver, HTTPPort: httpPort, TLSPort: tlsPort})
	root := filepath.Join(t.TempDir(), "pebble-root.pem")
	if err := os.WriteFile(root, ca.ServerRootPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "psk_Pro5jW8cZ1qN6bY3xF7vGu2k"
	base, _ := start(t, []string{
		"-addr", httpAddr, "-tls-addr", tlsAddr,
		"-acme-ca", ca.DirectoryURL(), "-acme-root", root, "-acme-dcv-zone", dcvZone,
		"-dns-resolvers", resolver, "-cname-target", "edge.petstore.example",
		"-keys", key + ":pro",
	}, map[string]string{
		"PETSTORE_DNS_PROVIDER": "rfc2136://" + rfc2136test.KeyName + ":" + knot.Secret + "@" + knot.Addr + "?zones=" + dcvZone,
	})
	type domainView struct {
		Status      string `json:"status"`
		Records     []struct{ Type, Name, Value string }
		Certificate struct {
			Status string `json:"status"`
		} `json:"certificate"`
	}
	dashboard := func(method, path string) domainView {
		t.Helper()
		body := ""
		if method == "POST" && path == "" {
			body = `{"name":"` + name + `"}`
		}
		status, _, out := call(t, method, base+"/dashboard/api/domains"+path, key, "", body)
		var d domainView
		if status/100 != 2 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("%s %s: %d %s", method, path, status, out)
		}
		return d
	}
	d := dashboard("POST", "")
	var dcv []libdns.Record
	for _, r := range d.Records {
		if r.Type == "CNAME" && strings.HasPrefix(r.Name, "_acme-challenge") && strings.HasSuffix(r.Value, "."+dcvZone) {
			dcv = append(dcv, libdns.CNAME{Name: r.Name, TTL: time.Hour, Target: r.Value + "."})
		}
	}
	if len(dcv) != 1 {
		t.Fatalf("no delegation record among %+v", d.Records)
	}
	if _, err := zone.AppendRecords(ctx, "example.test.", append(dcv,
		libdns.CNAME{Name: "www", TTL: time.Hour, Target: "old-host.example.org."})); err != nil {
		t.Fatal(err)
	}
	if d := dashboard("POST", "/"+name+"/verify"); d.Status != "pending" {
		t.Fatalf("verify with the CNAME at the old host: %+v, want pending", d)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if d = dashboard("GET", "/"+name); d.Certificate.Status == "issued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate after 30 s: %+v", d)
		}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr,
		&tls.Config{ServerName: name, RootCAs: ca.IssuedRoots()})
	if err != nil {
		t.Fatalf("handshake before the cutover: %v", err)
	}
	conn.Close()
}

// TestACMECAFlag: -acme-ca must be an ACME directory's absolute http(s)
// URL; anything else is refused at start, rather than failing every
// certificate later.
func TestACMECAFlag(t *testing.T) {
	for _, v := range []string{"not a url", "acme-v02.api.letsencrypt.org/directory", "ftp://ca.example/dir", "https:///dir", "https://user:s3cret@ca.example/dir"} {
		_, err := parseConfig([]string{"-acme-ca", v}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "-acme-ca: ") {
			t.Errorf("-acme-ca %q: %v, want a -acme-ca error", v, err)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("-acme-ca %q: the error shows the password: %v", v, err)
		}
	}
	for _, v := range []string{"https://acme-v02.api.letsencrypt.org/directory", "http://127.0.0.1:14000/dir"} {
		if cfg, err := parseConfig([]string{"-acme-ca", v}, func(string) string { return "" }, io.Discard); err != nil || cfg.acmeCA != v {
			t.Errorf("-acme-ca %q: %v", v, err)
		}
	}
}

// TestACMEPortsOfServiceNames: -addr and -tls-addr may name their port by
// a service name (docs/configuration.md), and the ACME issuer, which
// tells the CA where it answers HTTP-01 and TLS-ALPN-01, gets its number.
func TestACMEPortsOfServiceNames(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want int
	}{
		{":8080", 8080},
		{"127.0.0.1:http", 80},
		{":https", 443},
	} {
		if got, err := portOf(tc.addr); err != nil || got != tc.want {
			t.Errorf("portOf(%q) = %d, %v; want %d", tc.addr, got, err, tc.want)
		}
	}
}
