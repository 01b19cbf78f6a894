// Package js_test runs the JavaScript client's tests (node's own test runner) against a real
// laurel, so that `go test ./...` covers the client too.
package js_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

const tokenSecret = "js-test-secret-of-at-least-32-bytes!"

var listening = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

func TestClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed: CI must install it")
		}
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "laurel")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/laurel").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"))
	serve.Env = append(os.Environ(), "LAUREL_ADMIN_KEY=js-admin", "LAUREL_TOKEN_SECRETS=js="+tokenSecret)
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Kill()
		serve.Wait()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("laurel did not listen")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("laurel was not ready")
		}
	}
	cmd := exec.CommandContext(ctx, node, "--test", "test/")
	cmd.Env = append(os.Environ(), "LAUREL_URL="+base, "LAUREL_ADMIN_KEY=js-admin", "LAUREL_TOKEN_KID=js", "LAUREL_TOKEN_SECRET="+tokenSecret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
