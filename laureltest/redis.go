package laureltest

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
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
	args []string // more arguments of redis-server
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
	dir := r.t.TempDir()
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--cluster-config-file", filepath.Join(dir, "nodes.conf")}, r.args...)
	r.cmd = exec.Command("redis-server", args...)
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

// DBSize is how many keys the server holds (0 when it does not answer), for tests that act
// once something has been written to it.
func (r *PrivateRedis) DBSize() int {
	var n int
	if r.command("DBSIZE", ":%d\r\n", &n) != nil {
		return 0
	}
	return n
}

// FlushAll empties the server, as an operator's FLUSHALL would.
func (r *PrivateRedis) FlushAll() {
	r.t.Helper()
	var ok string
	if err := r.command("FLUSHALL", "+%s\r\n", &ok); err != nil || ok != "OK" {
		r.t.Fatalf("FLUSHALL: %q, %v", ok, err)
	}
}

// command sends a command of one word and scans its reply with format.
func (r *PrivateRedis) command(name, format string, reply any) error {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(c, "*1\r\n$%d\r\n%s\r\n", len(name), name); err != nil {
		return err
	}
	_, err = fmt.Fscanf(c, format, reply)
	return err
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

// RedisCluster is a Redis Cluster of the test's own: masters on free loopback ports, no
// replicas, keeping nothing on disk, made with redis-cli --cluster create. It is stopped when
// the test ends; the test fails when redis-server or redis-cli cannot make it.
type RedisCluster struct {
	Addrs []string // host:port of each master
	nodes []*PrivateRedis
}

// NewRedisCluster starts a cluster of masters masters and waits (at most 30 s) until every
// one of them says the cluster is ok.
func NewRedisCluster(t testing.TB, masters int) *RedisCluster {
	t.Helper()
	c := new(RedisCluster)
	for len(c.nodes) < masters {
		// A cluster node also listens on its port + 10000, for the cluster bus.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().(*net.TCPAddr)
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", addr.Port+10000))
		ln.Close()
		if err != nil {
			continue
		}
		bus.Close()
		r := &PrivateRedis{Addr: addr.String(), t: t, args: []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "5000"}}
		r.Start()
		t.Cleanup(r.Kill)
		c.nodes = append(c.nodes, r)
		c.Addrs = append(c.Addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	Within(t, 30*time.Second, "the cluster is ok on every node", func() bool {
		for _, a := range c.Addrs {
			_, port, _ := net.SplitHostPort(a)
			out, err := exec.Command("redis-cli", "-p", port, "cluster", "info").Output()
			if err != nil || !strings.Contains(string(out), "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return c
}

// Keys lists the keys starting with prefix that each master holds, by its address.
func (c *RedisCluster) Keys(t testing.TB, prefix string) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	for _, a := range c.Addrs {
		_, port, _ := net.SplitHostPort(a)
		b, err := exec.Command("redis-cli", "-p", port, "--scan", "--pattern", prefix+"*").Output()
		if err != nil {
			t.Fatalf("scanning %s: %v", a, err)
		}
		out[a] = strings.Fields(string(b))
	}
	return out
}
