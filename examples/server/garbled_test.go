package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petstorekit/petstore/internal/mysqlfault"
	"github.com/petstorekit/petstore/internal/pgfault"
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

// TestGarbledPostgresMessageIs503: a message from PostgreSQL garbled on
// the way, in the answer to a pet's read (run natively over pgx's
// extended protocol) or to an order's insert (bun's SQL, over the simple
// protocol, marked by its quantity), makes that request 503 with Retry-After, never 500, and
// never runs the statement again behind the client's back: the order is
// stored at most once. A message claiming more bytes than arrive is 503
// within -db-timeout. The server goes on serving after it.
func TestGarbledPostgresMessageIs503(t *testing.T) {
	t.Parallel()
	const id = 464367618 // no pet's: its bytes mark the statements on the wire
	var arg [8]byte      // the read's parameter, the id, as pgx sends it
	binary.BigEndian.PutUint64(arg[:], id)
	read := [2]string{"GET", "/v1/pets/464367618"}
	order := [2]string{"POST", "/v1/store/orders"}
	msg := pgfault.Message
	for _, tc := range []struct {
		name  string
		req   [2]string
		match []byte
		typ   byte
		raw   []byte
	}{
		{"read BindComplete", read, arg[:], pgfault.BindComplete, msg('2', []byte{1})},
		{"read CommandComplete", read, arg[:], pgfault.CommandComplete, msg('C', nil)},
		{"read ReadyForQuery", read, arg[:], pgfault.ReadyForQuery, msg('Z', nil)},
		{"read length beyond what is sent", read, arg[:], pgfault.CommandComplete, []byte{'C', 0, 0, 1, 0}},
		{"order RowDescription", order, []byte("464367618"), pgfault.RowDescription, msg('T', []byte{0, 1})},
		{"order DataRow", order, []byte("464367618"), pgfault.DataRow, msg('D', []byte{0, 1, 0, 0, 0, 9})},
		{"order CommandComplete", order, []byte("464367618"), pgfault.CommandComplete, msg('C', nil)},
		{"order ReadyForQuery", order, []byte("464367618"), pgfault.ReadyForQuery, msg('Z', nil)},
		{"order unknown message", order, []byte("464367618"), pgfault.RowDescription, msg('?', nil)},
		{"order length beyond what is sent", order, []byte("464367618"), pgfault.RowDescription, []byte{'T', 0, 0, 1, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy, dsn := pgfault.StartFor(t, testenv.PostgresSchema(t))
			base, _ := start(t, []string{"-addr", "127.0.0.1:0", "-db", dsn, "-db-timeout", "1s", "-start-timeout", "30s",
				"-keys", faultKey + ":enterprise:1000/10000"}, nil)
			if status, _, body := call(t, "GET", base+read[1], faultKey, "", ""); status != 404 {
				t.Fatalf("before: GET %s = %d %s, want 404", read[1], status, body)
			}
			body := ""
			if tc.req == order {
				status, _, pet := call(t, "POST", base+"/v1/pets", faultKey, "", `{"name":"Ordered","categoryId":1}`)
				var p struct{ ID int64 }
				if err := json.Unmarshal([]byte(pet), &p); status != 201 || err != nil {
					t.Fatalf("a pet to order: %d %s", status, pet)
				}
				body = fmt.Sprintf(`{"petId":%d,"quantity":464367618}`, p.ID)
			}
			fired := proxy.Garble(tc.match, tc.typ, tc.raw)
			begun := time.Now()
			status, h, got := callWithin(t, 5*time.Second, tc.req[0], base+tc.req[1], faultKey, body)
			took := time.Since(begun)
			select {
			case <-fired:
			default:
				t.Fatalf("the proxy garbled no message; %s %s = %d %s", tc.req[0], tc.req[1], status, got)
			}
			if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(got, `"unavailable"`) {
				t.Errorf("%s %s answered with a garbled message = %d Retry-After=%q %s, want 503 unavailable with Retry-After", tc.req[0], tc.req[1], status, h.Get("Retry-After"), got)
			}
			// A message claiming more than arrives leaves the driver
			// waiting for the rest: -db-timeout (1 s) ends the wait.
			if took > 2500*time.Millisecond {
				t.Errorf("%s %s answered after %v, with a 1 s -db-timeout", tc.req[0], tc.req[1], took.Round(time.Millisecond))
			}
			if status, _, body := call(t, "GET", base+read[1], faultKey, "", ""); status != 404 {
				t.Fatalf("after the garbled message: GET %s = %d %s, want 404", read[1], status, body)
			}
			status, _, list := call(t, "GET", base+"/v1/store/orders", faultKey, "", "")
			if status != 200 {
				t.Fatalf("after the garbled message: GET /v1/store/orders = %d %s", status, list)
			}
			if n := strings.Count(list, `"quantity":464367618`); n > 1 {
				t.Fatalf("%d orders stored for one POST answered with a garbled message, want at most 1: %s", n, list)
			}
		})
	}
}
