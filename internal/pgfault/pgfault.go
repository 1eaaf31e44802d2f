// Package pgfault is a test proxy between a PostgreSQL client and a real
// PostgreSQL server on the loopback interface that replaces one message
// of one chosen response with bytes the test gives. A real server never
// sends a truncated or garbled message, but a broken proxy, a middlebox
// or a bit flip on the way can, and the tests need to see what a client
// makes of one after a real startup.
//
// It is internal/mysqlfault for PostgreSQL's wire protocol: after the
// startup message, every message is a 1-byte type and a 4-byte
// big-endian length that counts itself and the body. It supports no TLS:
// it answers a client's SSLRequest or GSSENCRequest with 'N' itself, as
// a server without TLS does, so the startup that follows is in the clear.
package pgfault

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/petstorekit/petstore/internal/wireproxy"
)

// Message types a test may name (the server's, after the startup).
const (
	ParseComplete   = '1'
	BindComplete    = '2'
	CommandComplete = 'C'
	DataRow         = 'D'
	ErrorResponse   = 'E'
	RowDescription  = 'T'
	ReadyForQuery   = 'Z'
)

// Proxy forwards connections from its own loopback address to a
// PostgreSQL server, replacing a message when a rule set by Garble
// fires. Its methods are safe for concurrent use.
type Proxy struct {
	l *wireproxy.Listener

	mu   sync.Mutex
	rule *rule
}

// rule is one armed Garble: after the next client message containing
// match, the server's first message of type typ on that connection is
// replaced by raw.
type rule struct {
	match []byte
	typ   byte
	raw   []byte
	fired chan struct{}
}

// Start starts a proxy to target ("host:port" on the loopback interface)
// on a free port of 127.0.0.1 and closes it when tb ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p := &Proxy{}
	p.l = wireproxy.Start(tb, "pgfault", target, p.serve)
	return p
}

// StartFor is Start in front of the server a postgres:// URL names: it
// returns the proxy and the same URL with the proxy's address for its
// host.
func StartFor(tb testing.TB, rawURL string) (*Proxy, string) {
	tb.Helper()
	var p *Proxy
	u := wireproxy.Rehost(tb, rawURL, func(target string) string {
		p = Start(tb, target)
		return p.Addr()
	})
	return p, u
}

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.l.Addr() }

// Garble arms the proxy once: after the next message the client sends
// (on any connection, after its startup) that contains match, the first
// message of type typ the server sends on that connection is replaced by
// raw, written as it is: raw is a whole message, its type and length
// included, so a test can send one whose length lies (Message builds an
// honest one). The messages before and after it pass as sent. The
// returned channel is closed as the message is replaced, before the
// client can read it.
func (p *Proxy) Garble(match []byte, typ byte, raw []byte) <-chan struct{} {
	r := &rule{match: bytes.Clone(match), typ: typ, raw: bytes.Clone(raw), fired: make(chan struct{})}
	p.mu.Lock()
	p.rule = r
	p.mu.Unlock()
	return r.fired
}

// Message returns the message of type typ with body, its length set.
func Message(typ byte, body []byte) []byte {
	m := make([]byte, 5, 5+len(body))
	m[0] = typ
	binary.BigEndian.PutUint32(m[1:], uint32(4+len(body)))
	return append(m, body...)
}

// take returns the armed rule if msg, a client message, contains its
// match, and disarms it.
func (p *Proxy) take(msg []byte) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rule == nil || !bytes.Contains(msg, p.rule.match) {
		return nil
	}
	r := p.rule
	p.rule = nil
	return r
}

// link is one proxied connection. pending is the rule whose client
// message passed last and whose server message has not passed yet.
type link struct {
	mu      sync.Mutex
	pending *rule
}

func (p *Proxy) serve(client net.Conn, dial func() (net.Conn, error)) {
	startup, err := p.startup(client)
	if err != nil {
		return
	}
	server, err := dial()
	if err != nil {
		return
	}
	if _, err := server.Write(startup); err != nil {
		return
	}
	l := &link{}
	done := make(chan struct{}, 2)
	go func() { p.fromClient(l, server, client); done <- struct{}{} }()
	go func() { p.fromServer(l, client, server); done <- struct{}{} }()
	<-done // either side ending ends the link (the listener closes both)
}

// Request codes of the untyped messages a client may send before its
// startup message.
const (
	sslRequest    = 80877103
	gssencRequest = 80877104
)

// startup reads the client's untyped first messages, declining TLS and
// GSS encryption, and returns its startup message (or cancel request)
// whole, to be sent to the server.
func (p *Proxy) startup(client net.Conn) ([]byte, error) {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(client, hdr[:]); err != nil {
			return nil, err
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		if n < 8 || n > 1<<16 {
			return nil, fmt.Errorf("pgfault: startup message of %d bytes", n)
		}
		msg := make([]byte, n)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(client, msg[8:]); err != nil {
			return nil, err
		}
		switch binary.BigEndian.Uint32(hdr[4:]) {
		case sslRequest, gssencRequest:
			if _, err := client.Write([]byte{'N'}); err != nil {
				return nil, err
			}
			continue
		}
		return msg, nil
	}
}

// fromClient forwards the client's messages. One that matches the armed
// rule makes the rule pending before it reaches the server, so that the
// answer it causes is the one garbled.
func (p *Proxy) fromClient(l *link, dst, src net.Conn) {
	for {
		msg, err := readMessage(src)
		if err != nil {
			return
		}
		if r := p.take(msg); r != nil {
			l.mu.Lock()
			l.pending = r
			l.mu.Unlock()
		}
		if _, err := dst.Write(msg); err != nil {
			return
		}
	}
}

// fromServer forwards the server's messages, replacing the one the
// pending rule names.
func (p *Proxy) fromServer(l *link, dst, src net.Conn) {
	for {
		msg, err := readMessage(src)
		if err != nil {
			return
		}
		l.mu.Lock()
		r := l.pending
		replaced := r != nil && msg[0] == r.typ
		if replaced {
			l.pending = nil
			msg = r.raw
		}
		l.mu.Unlock()
		if replaced {
			// Before the write: the client may act on what it reads
			// before this goroutine runs again.
			close(r.fired)
		}
		if _, err := dst.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one typed message whole: its type, its length and
// its body.
func readMessage(r io.Reader) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("pgfault: message %q of length %d", hdr[0], n)
	}
	msg := make([]byte, 5+n-4)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return nil, fmt.Errorf("pgfault: short message: %w", err)
	}
	return msg, nil
}
