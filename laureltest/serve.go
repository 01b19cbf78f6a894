package laureltest

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var listening = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// ServeCommand builds the laurel command and runs `laurel serve` over a fresh directory on a
// free loopback port, with env (KEY=value) added to its environment, until the test ends. It
// returns the server's base URL once /readyz answers 200. The clients in other languages
// (clients/js, clients/csharp) run their tests against it.
func ServeCommand(t testing.TB, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	bin := filepath.Join(dir, "laurel")
	build := exec.Command("go", "build", "-o", bin, "./cmd/laurel")
	build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	serve := exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"))
	serve.Env = append(os.Environ(), env...)
	log := &Buffer{}
	serve.Stderr = log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Kill()
		serve.Wait()
	})
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(log.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("laurel serve did not listen; its log:\n%s", log.String())
		}
	}
	Within(t, 30*time.Second, "laurel serve ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}
