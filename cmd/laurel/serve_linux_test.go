//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// On a terminal, serve says where it listens in a line a person reads, once it is ready,
// among its log lines (JSON, for machines).
func TestServeOnATerminal(t *testing.T) {
	term, screen := openPTY(t)
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir()}, io.Discard, term)
	}()
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("serve exited %d", c)
		}
	}()
	ready := regexp.MustCompile(`(?m)^laurel is ready at (http://127\.0\.0\.1:[0-9]+)/ \(boards; the admin console at /admin, the API under /v1\)\. Ctrl-C stops it\.\r?$`)
	var out bytes.Buffer
	buf := make([]byte, 4096)
	screen.SetReadDeadline(time.Now().Add(20 * time.Second))
	for !ready.Match(out.Bytes()) {
		n, err := screen.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("the terminal shows %q (%v); want the line that says where laurel is ready", out.String(), err)
		}
	}
	url := string(ready.FindSubmatch(out.Bytes())[1])
	if !bytes.Contains(out.Bytes(), []byte(`"msg":"listening","addr":"`+url[len("http://"):])) {
		t.Errorf("the line names %s; the log says %q", url, out.String())
	}
	if status := readyz(url); status != http.StatusOK {
		t.Errorf("%s/readyz answers %d right after the line", url, status)
	}
}
