package http_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

// TestLimitListener: a server that serves as many connections as it may answers the next one
// at once with 503 unavailable (JSON, Retry-After) and closes it; once a connection closes,
// a new one is served.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(lhttp.LimitListener(ln, 2, nil))
	defer srv.Close()
	addr := ln.Addr().String()

	// get sends a request on a connection of its own, which it keeps open, and returns the
	// answer's status, Retry-After and body.
	get := func() (net.Conn, int, string, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return c, resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}
	a, code, _, _ := get()
	b, code2, _, _ := get()
	if code != 200 || code2 != 200 {
		t.Fatalf("the first two connections: %d, %d", code, code2)
	}
	start := time.Now()
	c, code, retry, body := get()
	c.Close()
	if code != 503 || retry != "1" || !strings.Contains(body, `"code": "unavailable"`) || time.Since(start) > 2*time.Second {
		t.Fatalf("a connection over the limit: %d, Retry-After %q, %q after %v", code, retry, body, time.Since(start))
	}
	a.Close()
	b.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, code, _, _ := get()
		c.Close()
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served after the others closed")
		}
	}
}
