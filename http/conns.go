package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/laurel/laurel"
)

// A server out of file descriptors fails in every part at once: its store cannot open a
// file, its accept loop spins. So laurel serves at most a fixed number of connections, below
// the process's descriptor limit, and answers the connections beyond it itself: 503
// unavailable with Retry-After, then closes them — the client learns at once, and what is
// served keeps its descriptors.

// refusedResponse is the whole answer to a connection over the limit.
var refusedResponse = func() []byte {
	body := `{"error": {"code": "unavailable", "message": "the server has too many connections; try again"}}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// maxRefusing bounds the refused connections being answered at once: each holds a
// descriptor for up to 2 s. Beyond it, a refused connection is closed unanswered.
const maxRefusing = 64

// LimitListener returns a listener that hands at most max connections at a time to its
// server; it answers the others with 503 and closes them, logging it (at warning level).
func LimitListener(ln net.Listener, max int, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, max: int64(max), log: log}
}

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing atomic.Int64
	log      *slog.Logger
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.log.Warn("refused a connection: the server has as many as -max-conns allows", "max_conns", l.max, "remote", c.RemoteAddr().String())
		if l.refusing.Add(1) > maxRefusing {
			l.refusing.Add(-1)
			c.Close()
			continue
		}
		go func() {
			refuse(c)
			l.refusing.Add(-1)
		}()
	}
}

// refuse answers a connection over the limit without reading its request, and closes it.
func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(refusedResponse)
	if tc, ok := c.(*net.TCPConn); ok {
		// Let the client read the answer before its unread request makes the close a reset.
		tc.CloseWrite()
		c.SetReadDeadline(time.Now().Add(time.Second))
		var buf [4096]byte
		for {
			if _, err := c.Read(buf[:]); err != nil {
				break
			}
		}
	}
	c.Close()
}

// limitedConn gives its place back when closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

// Write passes what the server writes, but for the few answers net/http writes itself, in
// plain text, before a request reaches a handler (a malformed request, headers too large):
// those it rewrites into the API's JSON error.
func (c *limitedConn) Write(p []byte) (int, error) {
	if b, ok := jsonServerError(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// serverErrorHeaders is how net/http's own plain-text answers end their headers; a handler's
// answer never does (Go writes its headers sorted: Connection before Content-Type).
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonServerError rewrites one of net/http's own answers, "HTTP/1.1 <code> <text>" then
// serverErrorHeaders and a plain-text body, into the same status with the API's JSON error.
func jsonServerError(p []byte) ([]byte, bool) {
	// Most writes are a handler's answers: a 2xx or 3xx, or longer than these ever are.
	if len(p) > 1024 || !bytes.HasPrefix(p, []byte("HTTP/1.1 4")) && !bytes.HasPrefix(p, []byte("HTTP/1.1 5")) {
		return nil, false
	}
	head, _, ok := bytes.Cut(p, []byte(serverErrorHeaders))
	if !ok {
		return nil, false
	}
	status, err := strconv.Atoi(string(head[9:min(len(head), 12)]))
	if err != nil {
		return nil, false
	}
	code, message := laurel.EInvalid, "the request is malformed"
	if detail := strings.TrimPrefix(strings.TrimPrefix(string(head[min(len(head), 13):]), http.StatusText(status)), ": "); detail != "" {
		message += ": " + detail
	}
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		code, message = laurel.ETooLarge, "the request's headers are too large"
	case http.StatusNotImplemented:
		message = "the request's transfer encoding is not supported"
	}
	body, _ := json.Marshal(errorBody{Error: errorJSON{Code: code, Message: message}})
	body = append(body, '\n')
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", status, http.StatusText(status), len(body))
	return append(out, body...), true
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
