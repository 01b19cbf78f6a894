package laureltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// FillDisk writes a file into dir until the disk holding it has no space left.
func FillDisk(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := 0; ; i++ {
		if i == 1<<20 {
			t.Fatal("FillDisk: 1 TiB written, and the disk is not full")
		}
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// What is left is less than a chunk: fill it in halves, down to a byte (each size fits at
	// most once or twice where twice it did not).
	for n := len(chunk) / 2; n > 0; n /= 2 {
		for range 4 {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
}
