package main

// How serve sets up the Go runtime for its store: processors and garbage collection.

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
)

// goDefaultProcs is GOMAXPROCS as the Go runtime chose it at start: the cores, the container's
// CPU limit, or the GOMAXPROCS environment variable.
var goDefaultProcs = runtime.GOMAXPROCS(0)

// spareProcs is how many processors more than the cores the embedded store runs on: its writer
// and the writer's helper each keep one busy under a saturating write load, and with one more
// besides, one is often idle in the network poller, so a request that arrives meanwhile is
// read at once rather than at the runtime's next look at the network, up to 10 ms later
// (docs/benchmarks-log.md, "One processor more than the cores" and "Two processors more").
const spareProcs = 2

// setProcs sets how many processors laurel's goroutines run on and returns it: n when it is
// positive; else, unless the GOMAXPROCS environment variable chose, spareProcs more than the
// Go runtime's default on the embedded store, and that default on the scale-out store. A
// scale-out node, which waits on the network rather than computing, only spent more CPU an
// event with processors to spare.
func setProcs(n int, scaleOut bool) int {
	switch {
	case n > 0:
		runtime.GOMAXPROCS(n)
	case os.Getenv("GOMAXPROCS") != "":
	case scaleOut:
		runtime.GOMAXPROCS(goDefaultProcs)
	default:
		runtime.GOMAXPROCS(goDefaultProcs + spareProcs)
	}
	return runtime.GOMAXPROCS(0)
}

// scaleOutGCPercent is the garbage collector's target on a scale-out node: its live heap is
// small (connections, buffers, the steps in flight), so at Go's default of 100 it collects
// every few megabytes, 6% of its CPU under single-event writes; at 400 it collects a fifth as
// often, for a few tens of megabytes more (docs/benchmarks-log.md, "The scale-out node's
// statements, state and garbage").
const scaleOutGCPercent = 400

// setGC sets the garbage collector's target and returns it: unless the GOGC environment
// variable chose, scaleOutGCPercent on a scale-out node, and Go's default of 100 on the
// embedded store, whose heap is its index.
func setGC(scaleOut bool) string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	p := 100
	if scaleOut {
		p = scaleOutGCPercent
	}
	debug.SetGCPercent(p)
	return strconv.Itoa(p)
}
