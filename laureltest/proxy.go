package laureltest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
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
	// commitCut, when set, is called by the next connection that sends COMMIT, once it has
	// forwarded it and cut its client off (CutAfterCommit).
	commitCut func()
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
	cut := make(chan struct{}) // closed once this connection's COMMIT was forwarded and c cut off
	go func() {
		p.copy(b, c, p.watchCommit(c, cut))
		select {
		case <-cut: // the server goes on with what it was sent; its answers are dropped
			time.AfterFunc(time.Second, func() { b.Close() })
		default:
			b.Close()
		}
	}()
	p.copy(c, b, nil)
	c.Close()
	select {
	case <-cut:
		io.Copy(io.Discard, b)
	default:
	}
}

// CutAfterCommit arms the proxy to cut off, from the client's side, the next connection that
// sends a COMMIT, as soon as it has forwarded it: PostgreSQL commits, and the client never
// hears back — its connection lost in the middle of the commit. New connections go on being
// forwarded. then is called once the cut is made.
func (p *Proxy) CutAfterCommit(then func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitCut = then
}

// watchCommit returns what copy calls with each chunk a client sends: it reads PostgreSQL's
// protocol as it goes, so that a COMMIT can be cut after (CutAfterCommit), and once it has
// forwarded the message that commits, it closes cut and the client's connection.
func (p *Proxy) watchCommit(client net.Conn, cut chan struct{}) func([]byte) bool {
	var w commitWatch
	return func(chunk []byte) bool {
		if !w.feed(chunk) {
			return false
		}
		p.mu.Lock()
		then := p.commitCut
		p.commitCut = nil
		p.mu.Unlock()
		if then == nil {
			return false
		}
		close(cut)
		client.Close()
		then()
		return true
	}
}

// commitWatch reads the messages a PostgreSQL client sends and tells which commit: a simple
// query COMMIT, or the execution of a statement parsed from COMMIT (named, as pgx caches it,
// or not).
type commitWatch struct {
	started bool            // past the startup (and SSL request) messages, which have no type byte
	pending []byte          // a message not yet whole
	commits map[string]bool // names of the statements parsed from COMMIT
	bound   bool            // a Bind of one of them came; its Execute commits
}

func (w *commitWatch) feed(data []byte) (commits bool) {
	w.pending = append(w.pending, data...)
	for {
		head := 5
		if !w.started {
			head = 4
		}
		if len(w.pending) < head {
			return commits
		}
		size := int(binary.BigEndian.Uint32(w.pending[head-4 : head]))
		whole := head - 4 + size
		if size < 4 || len(w.pending) < whole {
			return commits
		}
		msg := w.pending[:whole]
		if !w.started {
			// A startup message's protocol is 3.0; an SSL or GSS request's code is not.
			w.started = len(msg) >= 8 && binary.BigEndian.Uint32(msg[4:8]) == 196608
		} else if w.message(msg[0], msg[5:]) {
			commits = true
		}
		w.pending = w.pending[whole:]
	}
}

func (w *commitWatch) message(kind byte, body []byte) bool {
	fields := bytes.Split(body, []byte{0})
	isCommit := func(sql []byte) bool { return strings.EqualFold(strings.TrimSpace(string(sql)), "COMMIT") }
	switch kind {
	case 'Q':
		return isCommit(fields[0])
	case 'P': // Parse: name, query
		if w.commits == nil {
			w.commits = make(map[string]bool)
		}
		w.commits[string(fields[0])] = len(fields) > 1 && isCommit(fields[1]) // an unnamed one is parsed anew
	case 'B': // Bind: portal, statement
		w.bound = len(fields) > 1 && w.commits[string(fields[1])]
	case 'E': // Execute
		return w.bound
	}
	return false
}

// copy forwards from src to dst, holding what it read while the proxy is paused; forwarded,
// when not nil, is called with each chunk once forwarded, and ends the copy by returning true.
func (p *Proxy) copy(dst io.Writer, src io.Reader, forwarded func([]byte) bool) {
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
			if forwarded != nil && forwarded(buf[:n]) {
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
