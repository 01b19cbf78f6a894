package laureltest

import (
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// PrivateRedis is a redis-server of the test's own on a free loopback port, keeping nothing
// on disk, for tests that kill, pause and restart the index's backend without disturbing
// the shared one.
type PrivateRedis struct {
	Addr string // host:port
	t    testing.TB
	cmd  *exec.Cmd
}

// NewPrivateRedis starts a PrivateRedis, stopped when the test ends. The test fails when
// redis-server cannot be started.
func NewPrivateRedis(t testing.TB) *PrivateRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &PrivateRedis{Addr: ln.Addr().String(), t: t}
	ln.Close()
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Start starts the server, empty, on its port, and waits (at most 10 s) until it answers.
func (r *PrivateRedis) Start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.Addr)
	r.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.t.TempDir())
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.Addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not start", r.Addr)
		}
	}
}

// Kill stops the server at once (SIGKILL): its data is gone.
func (r *PrivateRedis) Kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

// Pause stops the server without closing its connections (SIGSTOP): it hangs, as a machine
// that stopped answering would. Resume lets it go on.
func (r *PrivateRedis) Pause()  { r.signal(syscall.SIGSTOP) }
func (r *PrivateRedis) Resume() { r.signal(syscall.SIGCONT) }

func (r *PrivateRedis) signal(sig syscall.Signal) {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Signal(sig)
	}
}

// Within waits until cond holds, polling every 20 ms, and returns how long that took; the
// test fails after d.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}
