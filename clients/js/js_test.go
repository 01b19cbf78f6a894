// Package js_test runs the JavaScript client's tests (node's own test runner) against a real
// laurel, so that `go test ./...` covers the client too.
package js_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/laurel/laurel/laureltest"
)

const tokenSecret = "js-test-secret-of-at-least-32-bytes!"

func TestClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed: CI must install it")
		}
		t.Skip("node is not installed")
	}
	base := laureltest.ServeCommand(t, "LAUREL_ADMIN_KEY=js-admin", "LAUREL_TOKEN_SECRETS=js="+tokenSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "test/")
	cmd.Env = append(os.Environ(), "LAUREL_URL="+base, "LAUREL_ADMIN_KEY=js-admin", "LAUREL_TOKEN_KID=js", "LAUREL_TOKEN_SECRET="+tokenSecret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
