//go:build unix

package bunopen

import (
	"net"
	"testing"
	"time"
)

// TestOpenDoesNotWaitForAReader: pgx's background reader, started when a
// write to the server is slow, may still sit in a Read of the connection
// once it is back in the pool idle (it stops only when that Read
// returns). The check before reuse must then neither wait for that Read,
// which waits for the server's next message, nor take what it reads.
// Before, open's read waited for the other one's lock: ResetSession, and
// the request that wanted the connection, hung until the server spoke
// (TestReadYourWritesUnderLoad/PostgreSQL under -race stalled so).
func TestOpenDoesNotWaitForAReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	server := <-accepted
	if server == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { server.Close() })
	c := &countingConn{Conn: nc}

	got := make(chan []byte, 1)
	go func() { // the background reader
		b := make([]byte, 8)
		n, _ := nc.Read(b)
		got <- b[:n]
	}()
	time.Sleep(50 * time.Millisecond) // let it block in Read: nothing is sent yet

	done := make(chan bool, 1)
	go func() {
		open, known := c.open()
		done <- open && known
	}()
	select {
	case open := <-done:
		if !open {
			t.Fatal("open = false for a connection the server keeps open")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("open waited for another Read of the connection")
	}
	if _, err := server.Write([]byte("Z")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "Z" {
		t.Fatalf("the reader got %q, want the server's %q: the check took it", b, "Z")
	}
}
