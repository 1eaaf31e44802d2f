// Package faultproxy is a TCP proxy on the loopback interface that the
// repository's fault tests put between a client and a real PostgreSQL,
// MariaDB or Redis server, to make that server fail the way networks and
// servers fail: Cut closes every connection and refuses new ones (a crashed
// server), Pause forwards nothing while accepting (a black hole: a hung
// server or a dropped route), SetLatency delays every chunk in both
// directions (a busy server or a distant one), and Restore ends every
// fault.
//
// It exists instead of Shopify's toxiproxy, which would bring Prometheus,
// protobuf, zerolog, gorilla/mux and urfave/cli into the module for these
// four verbs. It is bounded (MaxConns connections, a fixed number of
// chunks in flight per direction) and refuses any address that is not on
// the loopback interface: it is a test harness, not a network tool.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// MaxConns is the most connections a Proxy holds at once; further ones are
// closed as soon as they are accepted.
const MaxConns = 1024

// chunkSize is the most bytes read at once; inFlight is the most chunks a
// direction holds while it delays them, so a Proxy's memory is bounded.
const (
	chunkSize = 32 << 10
	inFlight  = 64
)

// Proxy forwards connections from its own loopback address to a target.
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	cut     bool
	paused  bool
	resume  chan struct{} // closed by Restore to wake paused writers
	latency time.Duration
	conns   map[*link]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// link is one proxied connection: the client's and the server's ends.
type link struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{} // closed with the link
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.dead)
		_ = l.client.Close()
		if l.server != nil {
			_ = l.server.Close()
		}
	})
}

// New starts a proxy to target ("host:port", the host a loopback address
// or "localhost") on a free port of 127.0.0.1. Close stops it.
func New(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("faultproxy: target %q is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, resume: make(chan struct{}), conns: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address, "127.0.0.1:<port>": what the client
// dials instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and makes the proxy close new ones as soon
// as they are accepted, until Restore: to the client the server has
// crashed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = make(map[*link]struct{})
	p.mu.Unlock()
	for l := range conns {
		l.close()
	}
}

// Pause stops forwarding in both directions, until Restore: connections
// are accepted and kept open, and what is sent on them waits, unanswered,
// as behind a black hole. Restore delivers it.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resume = make(chan struct{})
	}
}

// SetLatency delays every chunk, in each direction, by d from the moment
// it was read: a round trip takes 2·d longer. Zero removes the delay.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = max(d, 0)
	p.mu.Unlock()
}

// Restore ends every fault: the proxy accepts and forwards again, what a
// pause held is delivered, and there is no added latency.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.latency = 0
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}

// Conns returns the number of connections the proxy holds open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops the proxy: it stops listening, closes every connection and
// returns once every goroutine it started has ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	if p.paused {
		p.paused = false
		close(p.resume)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for l := range conns {
		l.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient accept error; the listener is still open
		}
		p.mu.Lock()
		refuse := p.closed || p.cut || len(p.conns) >= MaxConns
		l := &link{client: c, dead: make(chan struct{})}
		if !refuse {
			p.conns[l] = struct{}{}
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as from a port nobody listens on
			}
			_ = c.Close()
			continue
		}
		go p.serve(l)
	}
}

// serve dials the target and forwards both directions until either side
// closes or the proxy cuts the link.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer p.drop(l)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		l.close()
		return
	}
	p.mu.Lock()
	_, live := p.conns[l]
	if live {
		l.server = server
	}
	p.mu.Unlock()
	if !live { // cut or closed while dialing
		_ = server.Close()
		l.close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(l, server, l.client) }()
	go func() { defer wg.Done(); p.pipe(l, l.client, server) }()
	wg.Wait()
}

func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
	l.close()
}

// chunk is bytes read from one side, due on the other at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst through a bounded queue: the reader stamps each
// chunk with its due time, the writer waits for it (and for the end of a
// pause) before writing. So latency delays every chunk by the same amount
// without serialising them, as a long link would. Either side ending
// closes the whole link.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	queue := make(chan chunk, inFlight)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range queue {
			if !p.wait(l, c.due) {
				l.close()
				continue // drain until the reader stops
			}
			if _, err := dst.Write(c.b); err != nil {
				l.close()
			}
		}
	}()
	for {
		b := make([]byte, chunkSize)
		n, err := src.Read(b)
		if n > 0 {
			p.mu.Lock()
			due := time.Now().Add(p.latency)
			p.mu.Unlock()
			queue <- chunk{b: b[:n], due: due}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.close()
			}
			break
		}
	}
	close(queue)
	<-done
	// The source is done: pass the end on, so a client closing its side
	// is seen by the server and the other direction ends too.
	l.close()
}

// wait sleeps until due, then until no pause is in force; it reports
// false when the link or the proxy closed meanwhile.
func (p *Proxy) wait(l *link, due time.Time) bool {
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.dead:
			t.Stop()
			return false
		}
	}
	for {
		p.mu.Lock()
		paused, resume, closed := p.paused, p.resume, p.closed
		p.mu.Unlock()
		select {
		case <-l.dead:
			return false
		default:
		}
		if closed {
			return false
		}
		if !paused {
			return true
		}
		select {
		case <-resume:
		case <-l.dead:
			return false
		}
	}
}

// Start is New for tests: it fails tb when the proxy cannot start and
// closes the proxy when tb ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := New(target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// StartFor is Start in front of the server a URL names
// ("postgres://user@127.0.0.1:5432/db?..."): it returns the proxy and the
// same URL with the proxy's address for its host.
func StartFor(tb testing.TB, rawURL string) (*Proxy, string) {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	p := Start(tb, u.Host)
	u.Host = p.Addr()
	return p, u.String()
}
