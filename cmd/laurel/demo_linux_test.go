//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoUnderGoRun runs the README's `go run ./cmd/laurel demo` from the checkout's root:
// the line it prints to play the same game again is that command with the seed (it printed
// `laurel demo -seed N`, and under go run there is no laurel to run).
func TestDemoUnderGoRun(t *testing.T) {
	line := replayLine(t, "go", "run", "./cmd/laurel", "demo", "-addr", "127.0.0.1:0", "-rate", "1")
	if !regexp.MustCompile(`^go run \./cmd/laurel demo -addr 127\.0\.0\.1:0 -rate 1 -seed [0-9]+$`).MatchString(line) {
		t.Fatalf("under go run, the demo says to play again with %q", line)
	}
}

// replayLine runs a demo command in the module's root and returns what it prints after "the
// same game again: ", then stops it (and the program go run started) with Ctrl-C.
func replayLine(t *testing.T, command ...string) string {
	t.Helper()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run passes no signal on: signal the group, as a terminal does
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		defer close(line)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if replay, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "the same game again: "); ok {
				line <- replay
			}
		}
	}()
	var replay string
	select {
	case replay = <-line: // a cold build takes minutes on a busy machine
	case <-time.After(5 * time.Minute):
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Errorf("%s did not stop on Ctrl-C", strings.Join(command, " "))
	}
	if replay == "" {
		t.Fatalf("%s printed no line to play again; stderr:\n%s", strings.Join(command, " "), stderr.String())
	}
	return replay
}
