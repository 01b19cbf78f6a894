package embedded_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/embedded"
)

// TestDirectoryInUse: a second store on a data directory in use is refused with a message
// that says so and names the process that holds it, in this process and from another one.
func TestDirectoryInUse(t *testing.T) {
	if dir := os.Getenv("LAUREL_TEST_HOLD_DIR"); dir != "" {
		holdDirectory(t, dir)
		return
	}
	dir := t.TempDir()
	a, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = embedded.Open(dir, embedded.Options{})
	if want := fmt.Sprintf("in use by another laurel (process %d)", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second store on %s: %v; want %q", dir, err, want)
	}
	a.Close()
	// Closed, it names no holder (the note stayed, naming a process long gone).
	if _, err := os.Stat(filepath.Join(dir, "laurel.pid")); !os.IsNotExist(err) {
		t.Fatalf("laurel.pid after a clean close: %v; want none", err)
	}

	// Another process holds it.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDirectoryInUse$")
	cmd.Env = append(os.Environ(), "LAUREL_TEST_HOLD_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ready := filepath.Join(dir, "held")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process did not open the store")
		}
	}
	_, err = embedded.Open(dir, embedded.Options{})
	if want := fmt.Sprintf("in use by another laurel (process %d)", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a store on a directory another process holds: %v; want %q", err, want)
	}
	// Once it is gone, the directory opens.
	cmd.Process.Kill()
	cmd.Wait()
	b, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	b.Close()
}

// holdDirectory is the other process: it opens the store, says so, and waits to be killed.
func holdDirectory(t *testing.T, dir string) {
	if _, err := embedded.Open(dir, embedded.Options{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "held"), nil, 0o644)
	time.Sleep(time.Minute)
}
