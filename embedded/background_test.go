//go:build linux

package embedded_test

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/laurel/laurel/embedded"
)

// niceOf reads the nice value of thread tid of this process from /proc, and whether the
// thread is still there.
func niceOf(t *testing.T, tid int) (int, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command, in parentheses, may hold spaces: count the fields from after it.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, err := strconv.Atoi(fields[16]) // stat(5)'s field 19, the 17th after the command
	if err != nil {
		t.Fatalf("stat of thread %d: %v", tid, err)
	}
	return n, true
}

// The store's background work (seals, merges, rewrites) runs on threads ranked below the
// requests', and that rank never passes to a thread that serves requests once it ends.
func TestBackgroundThreadsRankBelowRequests(t *testing.T) {
	const n = 4
	var mu sync.Mutex
	tids := map[int]int{} // thread → its nice while the work ran
	var started sync.WaitGroup
	started.Add(n)
	embedded.InBackground(n, func() {
		tid := syscall.Gettid()
		nice, _ := niceOf(t, tid)
		mu.Lock()
		tids[tid] = nice
		mu.Unlock()
		started.Done()
		started.Wait() // all n at once: n threads
	})
	if len(tids) != n {
		t.Fatalf("%d goroutines at once ran on %d threads", n, len(tids))
	}
	pid := os.Getpid()
	for tid, nice := range tids {
		if nice != 10 {
			t.Errorf("thread %d ran background work at nice %d, want 10", tid, nice)
		}
		if tid == pid {
			continue // the main thread is parked for good instead (the runtime's mexit): it runs nothing more
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			nice, alive := niceOf(t, tid)
			if !alive {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d is still there at nice %d after its background goroutine ended: request goroutines may run on it", tid, nice)
			}
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if nice, alive := niceOf(t, tid); alive && nice != 0 && tid != pid {
			t.Errorf("thread %d runs at nice %d, want 0", tid, nice)
		}
	}
}
