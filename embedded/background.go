package embedded

import "runtime"

// A seal, a merge of id runs, a rewrite of the checkpoint file and a rebuild of the id filter
// each take a core for tenths of a second to seconds, on the same few cores as the requests.
// The server's own histograms put a paced top-100 read's p99 under 1 ms while its clients saw
// 4–9 ms (docs/benchmarks.md, "Issue 50's harness on a quiet machine"): the read waited for a
// core, not for the store. So those goroutines run on threads the kernel ranks below the
// request threads (a nice of backgroundNice): they take what the requests leave.

// backgroundNice is the nice value of the background threads: a tenth of a request thread's
// weight, so that a woken request thread preempts them, while they still move on a busy box.
const backgroundNice = 10

// inBackground lowers the calling goroutine, for the rest of its life, to a thread of its own
// with backgroundNice. The thread is never unlocked, so the runtime ends it with the
// goroutine (the main thread, which it cannot end, it parks for good) rather than handing its
// lowered rank to other goroutines.
func inBackground() {
	runtime.LockOSThread()
	lowerThread(backgroundNice)
}
