package main

// How serve sets up the Go runtime for its store: processors and garbage collection.

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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

// embeddedGCPercent is the garbage collector's target on the embedded store, whose heap is
// its index: at Go's default of 100 the heap grew to twice the index before each collection,
// a third of the resident set at 1M members; at 25 it grows by a quarter, for no CPU an event
// that the runs could tell from noise, since most of the index is pointer-free (the members'
// slots and ids) and a collection marks it without scanning it (docs/benchmarks.md, "Where
// memory goes").
const embeddedGCPercent = 25

// setGC sets the garbage collector's target and returns it: unless the GOGC environment
// variable chose, scaleOutGCPercent on a scale-out node, and embeddedGCPercent on the
// embedded store.
func setGC(scaleOut bool) string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	p := embeddedGCPercent
	if scaleOut {
		p = scaleOutGCPercent
	}
	debug.SetGCPercent(p)
	return strconv.Itoa(p)
}

// memoryShare is the share of the machine's memory, or of the container's limit where it has
// one, that laurel takes by default: its Go memory limit is that less what the store keeps
// outside the Go heap (Pebble's memtables and block cache), the rest is left to the page cache
// and the system.
const memoryShare = 0.75

// setMemoryLimit sets the Go memory limit, which the garbage collector steers by once the
// heap nears it, and returns it in bytes: mib MiB when positive; else, unless the GOMEMLIMIT
// environment variable chose, memoryShare of the memory there is (memoryTotal) less outside,
// the bytes the store holds beyond the Go heap.
func setMemoryLimit(mib, outside int64) int64 {
	switch {
	case mib > 0:
		debug.SetMemoryLimit(mib << 20)
	case os.Getenv("GOMEMLIMIT") != "":
	default:
		debug.SetMemoryLimit(defaultMemoryLimit(memoryTotal(), outside))
	}
	return debug.SetMemoryLimit(-1)
}

// defaultMemoryLimit is memoryShare of total less outside, at least 64 MiB.
func defaultMemoryLimit(total, outside int64) int64 {
	return max(int64(float64(total)*memoryShare)-outside, 64<<20)
}

// memoryTotal is the memory laurel may use: its cgroup's limit (v2's memory.max, v1's
// memory.limit_in_bytes) when it has one below the machine's memory, else the machine's
// (Linux's /proc/meminfo; elsewhere, without a cgroup, no limit).
func memoryTotal() int64 {
	total := int64(math.MaxInt64)
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		_, rest, _ := strings.Cut(string(data), "MemTotal:") // "  24683748 kB"
		if f := strings.Fields(rest); len(f) > 0 {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total = kb << 10
			}
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && n < total {
			total = n
		}
	}
	return total
}
