package testenv

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to a target. Frozen,
// it keeps every connection open but passes nothing in either direction,
// as a network partition does: the peers learn of it only by timing out.
type Proxy struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

// NewProxy starts a proxy to target, closed when tb ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	tb.Cleanup(p.close)
	go p.serve()
	return p
}

// Addr returns the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops passing data; Thaw resumes. Data sent while frozen is lost.
func (p *Proxy) Freeze() { p.frozen.Store(true) }

// Thaw resumes passing data.
func (p *Proxy) Thaw() { p.frozen.Store(false) }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, t)
		p.mu.Unlock()
		go p.pipe(c, t)
		go p.pipe(t, c)
	}
}

func (p *Proxy) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			src.Close()
			dst.Close()
			return
		}
		if p.frozen.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			src.Close()
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
