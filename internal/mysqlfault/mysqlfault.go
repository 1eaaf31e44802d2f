// Package mysqlfault is a test proxy between a MySQL client and a real
// MariaDB or MySQL server on the loopback interface that replaces one
// packet of one chosen response with bytes the test gives. A real server
// never sends a truncated or garbled packet, but a broken proxy, a
// middlebox or a bit flip on the way can, and the tests need to see what
// a client makes of one after a real handshake.
//
// Unlike internal/faultproxy, which knows nothing of what it carries,
// this proxy reads MySQL's packet framing (a 3-byte length and a
// sequence number before every packet); it supports neither TLS nor the
// compressed protocol, which the tests' clients do not ask for.
package mysqlfault

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

// Proxy forwards connections from its own loopback address to a MySQL
// server, replacing a packet when a rule set by Garble fires. Its methods
// are safe for concurrent use.
type Proxy struct {
	l *wireproxy.Listener

	mu   sync.Mutex
	rule *rule
}

// rule is one armed Garble: the response to the next command containing
// match has its packet number index replaced by payload.
type rule struct {
	match   []byte
	index   int
	payload []byte
	fired   chan struct{}
}

// Start starts a proxy to target ("host:port" on the loopback interface)
// on a free port of 127.0.0.1 and closes it when tb ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p := &Proxy{}
	p.l = wireproxy.Start(tb, "mysqlfault", target, p.serve)
	return p
}

// StartFor is Start in front of the server a mysql:// URL names: it
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

// Garble arms the proxy once: the server's response to the next command
// packet (sent by the client on any connection) that contains match gets
// its packet number index, counted from 0, replaced by payload, with the
// sequence number the server gave it; the rest of the response passes
// as sent. The returned channel is closed as the packet is
// replaced, before the client can read it.
func (p *Proxy) Garble(match []byte, index int, payload []byte) <-chan struct{} {
	r := &rule{match: bytes.Clone(match), index: index, payload: bytes.Clone(payload), fired: make(chan struct{})}
	p.mu.Lock()
	p.rule = r
	p.mu.Unlock()
	return r.fired
}

// take returns the armed rule if cmd, a command packet's payload,
// contains its match, and disarms it.
func (p *Proxy) take(cmd []byte) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rule == nil || !bytes.Contains(cmd, p.rule.match) {
		return nil
	}
	r := p.rule
	p.rule = nil
	return r
}

// link is one proxied connection. pending is the rule whose command the
// client sent last and whose response has not passed yet.
type link struct {
	mu      sync.Mutex
	pending *rule
}

func (p *Proxy) serve(client net.Conn, dial func() (net.Conn, error)) {
	server, err := dial()
	if err != nil {
		return
	}
	l := &link{}
	done := make(chan struct{}, 2)
	go func() { p.fromClient(l, server, client); done <- struct{}{} }()
	go func() { p.fromServer(l, client, server); done <- struct{}{} }()
	<-done // either side ending ends the link (the listener closes both)
}

// fromClient forwards the client's packets. A command that matches the
// armed rule makes the rule pending before the command reaches the
// server, so that the response it causes is the one garbled.
func (p *Proxy) fromClient(l *link, dst, src net.Conn) {
	for {
		hdr, body, err := readPacket(src)
		if err != nil {
			return
		}
		// A command starts a new sequence (0); the handshake response
		// and the auth exchange do not.
		if hdr[3] == 0 {
			if r := p.take(body); r != nil {
				l.mu.Lock()
				l.pending = r
				l.mu.Unlock()
			}
		}
		if _, err := dst.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// fromServer forwards the server's packets, replacing the one the
// pending rule names.
func (p *Proxy) fromServer(l *link, dst, src net.Conn) {
	n := 0 // packets of the pending rule's response seen so far
	for {
		hdr, body, err := readPacket(src)
		if err != nil {
			return
		}
		l.mu.Lock()
		r := l.pending
		replaced := r != nil && n == r.index
		if replaced {
			l.pending, n = nil, 0
			body = r.payload
			putUint24(hdr[:3], len(body))
		} else if r != nil {
			n++
		}
		l.mu.Unlock()
		if replaced {
			// Before the write: the client may act on what it reads
			// before this goroutine runs again.
			close(r.fired)
		}
		if _, err := dst.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// readPacket reads one MySQL packet: the 4-byte header (length, sequence)
// and the payload.
func readPacket(r io.Reader) (hdr [4]byte, body []byte, err error) {
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return hdr, nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	body = make([]byte, n)
	if _, err = io.ReadFull(r, body); err != nil {
		return hdr, nil, fmt.Errorf("mysqlfault: short packet: %w", err)
	}
	return hdr, body, nil
}

func putUint24(b []byte, n int) {
	var x [4]byte
	binary.LittleEndian.PutUint32(x[:], uint32(n))
	copy(b, x[:3])
}
