package main

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/petstorekit/petstore/internal/mysqlfault"
	"github.com/petstorekit/petstore/internal/testenv"
)

// TestGarbledMySQLPacketIs503: a packet from MariaDB garbled on the way
// (here the column count of the answer to one pet's read, which the
// driver would slice past its end and panic on) makes that request 503
// with Retry-After, and the server goes on serving, that pet's read
// included.
func TestGarbledMySQLPacketIs503(t *testing.T) {
	proxy, dsn := mysqlfault.StartFor(t, testenv.MySQLDatabase(t))
	base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn,
		"-keys", faultKey + ":enterprise:1000/10000"}, nil)
	const id = 464367618 // no pet's: its bytes mark the read of it on the wire
	path := "/v1/pets/464367618"
	if status, _, body := call(t, "GET", base+path, faultKey, "", ""); status != 404 {
		t.Fatalf("before: GET %s = %d %s, want 404", path, status, body)
	}
	// The read runs a prepared statement whose parameter, the id, is
	// sent as 8 little-endian bytes.
	var arg [8]byte
	binary.LittleEndian.PutUint64(arg[:], id)
	fired := proxy.Garble(arg[:], 0, []byte{0xfc})
	status, h, body := call(t, "GET", base+path, faultKey, "", "")
	select {
	case <-fired:
	default:
		t.Fatalf("the proxy garbled no packet; GET %s = %d %s", path, status, body)
	}
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("GET %s answered with a garbled packet = %d Retry-After=%q %s, want 503 unavailable with Retry-After", path, status, h.Get("Retry-After"), body)
	}
	for _, r := range []struct {
		path   string
		status int
	}{{path, 404}, {"/v1/pets", 200}} {
		if status, _, body := call(t, "GET", base+r.path, faultKey, "", ""); status != r.status {
			t.Fatalf("after the garbled packet: GET %s = %d %s, want %d", r.path, status, body, r.status)
		}
	}
}
