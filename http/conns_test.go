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

// TestServerErrorsAreJSON: the answers net/http writes itself, before any handler (a
// malformed request line, headers over the limit), reach the client as the API's JSON errors.
func TestServerErrorsAreJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: lhttp.NewServer(nil, lhttp.Config{}).Handler(), MaxHeaderBytes: 1 << 10}
	go srv.Serve(lhttp.LimitListener(ln, 10, nil))
	defer srv.Close()
	for _, c := range []struct {
		request string
		status  int
		body    string
	}{
		{"GARBAGE\r\n\r\n", 400, `{"error":{"code":"invalid_argument","message":"the request is malformed"}}`},
		{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, `{"error":{"code":"payload_too_large","message":"the request's headers are too large"}}`},
		{"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n", 501, `{"error":{"code":"invalid_argument","message":"the request's transfer encoding is not supported"}}`},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, `{"error":{"code":"invalid_argument","message":"the request is malformed: malformed Host header"}}`},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, c.request)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%.20q: %v", c.request, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(string(body)) != c.body {
			t.Errorf("%.20q: %d %s %s; want %d %s", c.request, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.body)
		}
	}
}
