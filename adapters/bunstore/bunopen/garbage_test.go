package bunopen_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/petstorekit/petstore/adapters/bunstore/bunopen"
)

// TestOpenMySQLGarbageHandshakeIsAnError: a server on a MySQL address
// whose greeting is cut short (another program on the port, a broken
// proxy) makes Open fail with an error, not crash the process: the
// driver panics on such a greeting.
func TestOpenMySQLGarbageHandshakeIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// A packet of 2 bytes, sequence 0: protocol 10 and an empty
			// server version, then nothing of what must follow.
			_, _ = c.Write([]byte{2, 0, 0, 0, 10, 0})
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 1024))
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		db, err := bunopen.Open(ctx, "mysql://root:hunter2@"+ln.Addr().String()+"/petstore")
		if err == nil {
			_ = db.Close()
			return fmt.Errorf("Open succeeded")
		}
		t.Log(err)
		return nil
	}()
	if err != nil {
		t.Fatalf("Open of a server with a garbled greeting: %v, want an error", err)
	}
}
