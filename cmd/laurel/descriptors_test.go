package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDescriptorBudget(t *testing.T) {
	for _, c := range []struct{ limit, store, conns int }{
		{200, 148, 1}, // the store's own and its log's Pebble each keep 74 files at least
		{300, 150, 86},
		{1024, 512, 448},
		{65536, 1000, 64472},
	} {
		if b := budgetOf(c.limit); b.storeFiles != c.store || b.conns != c.conns {
			t.Errorf("budget of %d descriptors: %+v; want %d store files, %d connections", c.limit, b, c.store, c.conns)
		}
	}
}

// TestServeUnderADescriptorLimit runs `laurel serve` in a process limited to 300 file
// descriptors (prlimit) and opens more connections than it may serve: those beyond its
// budget are answered 503 at once, never 500, and the store goes on taking writes and
// answering reads, with its own files, while the connections are held.
func TestServeUnderADescriptorLimit(t *testing.T) {
	if dir := os.Getenv("LAUREL_TEST_SERVE_DIR"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		os.Exit(run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-data", dir}, io.Discard, os.Stderr))
	}
	cmd := exec.Command("prlimit", "--nofile=300:300", os.Args[0], "-test.run=^TestServeUnderADescriptorLimit$")
	cmd.Env = append(os.Environ(), "LAUREL_TEST_SERVE_DIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	logs := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case logs <- sc.Text():
			default:
			}
		}
	}()
	var base string
	for deadline := time.After(20 * time.Second); base == ""; {
		select {
		case line := <-logs:
			if m := listening.FindStringSubmatch(line); m != nil {
				base = "http://" + m[1]
			}
		case <-deadline:
			t.Fatal("serve did not listen")
		}
	}
	startServeReady(t, base)
	if code, body := do(t, "PUT", base+"/v1/boards/b", `{"windows": ["all", "day"]}`); code != http.StatusCreated {
		t.Fatalf("create board: %d %v", code, body)
	}

	// Hold 120 connections, each after one request: 86 fit the budget of 300 descriptors.
	served, refused := 0, 0
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 120 {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /v1/boards HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", len(held), err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			served++
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("connection %d: status %d", len(held), resp.StatusCode)
		}
	}
	t.Logf("%d connections served, %d refused", served, refused)
	if served < 60 || served > 86 || refused == 0 {
		t.Fatalf("%d connections served, %d refused; want at most 86 served and the rest refused", served, refused)
	}
	for _, c := range held[:10] {
		c.Close()
	}
	held = held[10:]
	// With the connections still held, the store writes and reads.
	for i := range 20 {
		var events []string
		for j := range 200 {
			events = append(events, fmt.Sprintf(`{"member": "m%d-%d", "value": %d}`, i, j, j))
		}
		if code, body := eventually(t, "POST", base+"/v1/boards/b/events", `{"events": [`+strings.Join(events, ",")+"]}"); code != http.StatusOK {
			t.Fatalf("submit %d under the limit: %d %v", i, code, body)
		}
	}
	if code, body := eventually(t, "GET", base+"/v1/boards/b/entries?window=day", ""); code != http.StatusOK || body["total"] != float64(4000) {
		t.Fatalf("entries under the limit: %d %v", code, body)
	}
}

// eventually sends a request on a new connection, again while it is refused for want of a
// connection (the server may not have seen the closed ones close yet), for up to 5 s.
func eventually(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, out := do(t, method, url, body)
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return code, out
		}
	}
}

// startServeReady waits until base answers /readyz with 200.
func startServeReady(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); readyz(base) != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("serve never became ready")
		}
	}
}
