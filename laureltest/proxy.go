package laureltest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards a loopback port to a backend (PostgreSQL, say), so that a test can cut the
// backend off from a store, as a network or a server failure would, and restore it, without
// disturbing the backend other tests share.
type Proxy struct {
	Addr   string // host:port to give the store instead of the backend's
	target string
	t      testing.TB

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	paused chan struct{} // closed when not paused: what is forwarded waits for it
}

// NewProxy starts forwarding a free loopback port to target; it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, t: t, conns: map[net.Conn]bool{}, paused: make(chan struct{})}
	close(p.paused)
	p.listen("127.0.0.1:0")
	t.Cleanup(p.Cut)
	return p
}

func (p *Proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.mu.Lock()
	p.ln, p.Addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) forward(c net.Conn) {
	b, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, b) {
		return
	}
	go func() { p.copy(b, c); b.Close() }()
	p.copy(c, b)
	c.Close()
}

// copy forwards from src to dst, holding what it read while the proxy is paused.
func (p *Proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.paused
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause stops forwarding, in both directions, without closing anything: the backend hangs,
// as a stopped process or a silent network does. Resume forwards what was held.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
		p.paused = make(chan struct{})
	default: // paused already
	}
}

// Resume forwards again after Pause.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.paused:
	default:
		close(p.paused)
	}
}

// track records a forwarded pair, or closes it when the proxy was cut meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

// Cut closes every forwarded connection and refuses new ones: the backend looks down.
func (p *Proxy) Cut() {
	p.Resume() // nothing held waits on a closed connection
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore forwards the same port again.
func (p *Proxy) Restore() { p.listen(p.Addr) }
