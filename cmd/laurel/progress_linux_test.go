//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// On a terminal, progress is a bar redrawn in place (carriage returns), not lines.
func TestProgressOnATerminal(t *testing.T) {
	term, screen := openPTY(t)
	p := newProgress(term, "importing", 1000, false)
	if p.bar == nil {
		t.Fatal("no bar on a terminal")
	}
	p.Add(500)
	p.Finish()
	term.Close()

	var out bytes.Buffer
	buf := make([]byte, 4096)
	screen.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := screen.Read(buf)
		out.Write(buf[:n])
		if err != nil || bytes.Contains(out.Bytes(), []byte("50%")) && bytes.Count(out.Bytes(), []byte("\r")) >= 2 {
			break
		}
	}
	if !bytes.Contains(out.Bytes(), []byte("importing")) || !bytes.Contains(out.Bytes(), []byte("50%")) || !bytes.Contains(out.Bytes(), []byte("\r")) {
		t.Fatalf("the terminal shows %q, want a bar at 50%% drawn in place", out.String())
	}
	if bytes.Contains(out.Bytes(), []byte("importing: ")) {
		t.Fatalf("a plain progress line on a terminal: %q", out.String())
	}
}

// openPTY opens a pseudo-terminal: the program's side (a terminal to write to) and the
// screen's (what it shows).
func openPTY(t *testing.T) (term, screen *os.File) {
	t.Helper()
	screen, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { screen.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, screen.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, screen.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("ptsname: %v", e)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return term, screen
}
