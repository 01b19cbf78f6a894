package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestProcs: serve on the embedded store runs on two processors more than Go's default unless
// told otherwise, on the scale-out store on Go's default, and starting it again (as the tests
// do in one process) does not add another.
func TestProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	t.Setenv("GOMAXPROCS", "")
	for range 2 {
		if got := setProcs(0, false); got != goDefaultProcs+2 {
			t.Fatalf("setProcs(0) on the embedded store = %d, want Go's default %d + 2", got, goDefaultProcs)
		}
	}
	if got := setProcs(0, true); got != goDefaultProcs {
		t.Fatalf("setProcs(0) on the scale-out store = %d, want Go's default %d", got, goDefaultProcs)
	}
	if got := setProcs(5, true); got != 5 || runtime.GOMAXPROCS(0) != 5 {
		t.Fatalf("setProcs(5) = %d (GOMAXPROCS %d), want 5", got, runtime.GOMAXPROCS(0))
	}
	// An operator's GOMAXPROCS has chosen already: the runtime applied it at start.
	t.Setenv("GOMAXPROCS", "5")
	if got := setProcs(0, false); got != 5 {
		t.Fatalf("setProcs(0) with GOMAXPROCS set = %d, want it left at 5", got)
	}
}

// TestGC: a scale-out node collects garbage at scaleOutGCPercent, the embedded store at
// embeddedGCPercent, and an operator's GOGC decides over both.
func TestGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	t.Setenv("GOGC", "")
	percent := func() int { p := debug.SetGCPercent(0); debug.SetGCPercent(p); return p }
	if got := setGC(true); got != "400" || percent() != 400 {
		t.Fatalf("setGC on the scale-out store = %s (GC percent %d), want 400", got, percent())
	}
	if got := setGC(false); got != "25" || percent() != 25 {
		t.Fatalf("setGC on the embedded store = %s (GC percent %d), want 25", got, percent())
	}
	// GOGC was applied by the runtime at start; setGC leaves it.
	t.Setenv("GOGC", "250")
	debug.SetGCPercent(250)
	if got := setGC(true); got != "250" || percent() != 250 {
		t.Fatalf("setGC with GOGC=250 = %s (GC percent %d), want it left at 250", got, percent())
	}
}

// TestMemoryLimit: serve sets the Go memory limit from -memory-limit, else leaves an operator's
// GOMEMLIMIT, else takes three quarters of the memory there is less what the store holds
// outside the Go heap, and never less than 64 MiB.
func TestMemoryLimit(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	t.Setenv("GOMEMLIMIT", "")
	if got := setMemoryLimit(512, 224<<20); got != 512<<20 || debug.SetMemoryLimit(-1) != 512<<20 {
		t.Fatalf("setMemoryLimit(512 MiB) = %d, want %d", got, 512<<20)
	}
	total := memoryTotal()
	if total <= 0 || total == math.MaxInt64 {
		t.Fatalf("memoryTotal() = %d on Linux, want the machine's or the cgroup's memory", total)
	}
	if got, want := setMemoryLimit(0, 224<<20), int64(float64(total)*0.75)-224<<20; got != max(want, 64<<20) {
		t.Fatalf("setMemoryLimit(0) = %d, want 3/4 of %d less 224 MiB", got, total)
	}
	if got := defaultMemoryLimit(4<<30, 224<<20); got != 3<<30-224<<20 {
		t.Errorf("defaultMemoryLimit(4 GiB, 224 MiB) = %d, want 3 GiB less 224 MiB", got)
	}
	if got := defaultMemoryLimit(256<<20, 224<<20); got != 64<<20 {
		t.Errorf("defaultMemoryLimit(256 MiB, 224 MiB) = %d, want the floor of 64 MiB", got)
	}
	// GOMEMLIMIT was applied by the runtime at start; setMemoryLimit leaves it.
	t.Setenv("GOMEMLIMIT", "300MiB")
	debug.SetMemoryLimit(300 << 20)
	if got := setMemoryLimit(0, 224<<20); got != 300<<20 {
		t.Fatalf("setMemoryLimit(0) with GOMEMLIMIT=300MiB = %d, want it left at %d", got, 300<<20)
	}
}
