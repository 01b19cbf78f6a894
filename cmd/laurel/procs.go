package main

import (
	"os"
	"runtime"
)

// goDefaultProcs is GOMAXPROCS as the Go runtime chose it at start: the cores, the container's
// CPU limit, or the GOMAXPROCS environment variable.
var goDefaultProcs = runtime.GOMAXPROCS(0)

// setProcs sets how many processors laurel's goroutines run on and returns it: n when it is
// positive; else, unless the GOMAXPROCS environment variable chose, one more than the Go
// runtime's default on the embedded store, and that default on the scale-out store. With a
// processor more than the cores, one is often idle in the network poller, so a request that
// arrives while the embedded store's writes keep the cores busy is read at once rather than
// at the runtime's next look at the network, up to 10 ms later. A scale-out node, which waits
// on the network rather than computing, only spent more CPU an event that way
// (docs/benchmarks.md, "One processor more than the cores").
func setProcs(n int, scaleOut bool) int {
	switch {
	case n > 0:
		runtime.GOMAXPROCS(n)
	case os.Getenv("GOMAXPROCS") != "":
	case scaleOut:
		runtime.GOMAXPROCS(goDefaultProcs)
	default:
		runtime.GOMAXPROCS(goDefaultProcs + 1)
	}
	return runtime.GOMAXPROCS(0)
}
