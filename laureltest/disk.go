package laureltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SmallDisk mounts a tmpfs of size MiB for the test and returns its path; it is unmounted
// at cleanup. Mounting takes root: without it the test is skipped, except under CI.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", size), "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs (CI runs as root): %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs (not root?): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}
