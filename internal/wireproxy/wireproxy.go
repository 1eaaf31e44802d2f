// Package wireproxy is what the tests' protocol-aware fault proxies
// (internal/mysqlfault, internal/pgfault) share: a listener on a free
// port of 127.0.0.1 in front of a server on the loopback interface, whose
// connections a function of theirs carries, all closed when the test
// ends. The protocol, and what to garble in it, is theirs.
package wireproxy

import (
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Listener accepts connections for a proxy and hands each to its serve
// function. Its methods are safe for concurrent use.
type Listener struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 for a proxy to target
// ("host:port" on the loopback interface) and runs serve for each
// connection, with a dial function that connects to target. When serve
// returns, the client's connection and every one dial made are closed;
// they are also closed, and serve waited for, when tb ends. name prefixes
// the failures (the proxy's package).
func Start(tb testing.TB, name, target string, serve func(client net.Conn, dial func() (net.Conn, error))) *Listener {
	tb.Helper()
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		tb.Fatalf("%s: target %q: %v", name, target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		tb.Fatalf("%s: target %q is not a loopback address", name, target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &Listener{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept(serve)
	tb.Cleanup(l.close)
	return l
}

// Rehost returns rawURL with the host start returns for its host: the
// URL of a proxy started in front of the server rawURL names.
func Rehost(tb testing.TB, rawURL string, start func(target string) (addr string)) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Host = start(u.Host)
	return u.String()
}

// Addr returns the listener's address.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

func (l *Listener) close() {
	_ = l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

func (l *Listener) accept(serve func(net.Conn, func() (net.Conn, error))) {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.wg.Add(1)
		go l.carry(c, serve)
	}
}

// carry runs serve for client and closes its connections after it.
func (l *Listener) carry(client net.Conn, serve func(net.Conn, func() (net.Conn, error))) {
	defer l.wg.Done()
	var mine []net.Conn
	var mu sync.Mutex
	own := func(c net.Conn) {
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		mu.Lock()
		mine = append(mine, c)
		mu.Unlock()
	}
	own(client)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range mine {
			_ = c.Close()
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
		}
	}()
	serve(client, func() (net.Conn, error) {
		c, err := net.DialTimeout("tcp", l.target, 5*time.Second)
		if err == nil {
			own(c)
		}
		return c, err
	})
}
