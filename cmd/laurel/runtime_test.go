package main

import (
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

// TestGC: a scale-out node collects garbage at scaleOutGCPercent, the embedded store at Go's
// default, and an operator's GOGC decides over both.
func TestGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	t.Setenv("GOGC", "")
	percent := func() int { p := debug.SetGCPercent(0); debug.SetGCPercent(p); return p }
	if got := setGC(true); got != "400" || percent() != 400 {
		t.Fatalf("setGC on the scale-out store = %s (GC percent %d), want 400", got, percent())
	}
	if got := setGC(false); got != "100" || percent() != 100 {
		t.Fatalf("setGC on the embedded store = %s (GC percent %d), want 100", got, percent())
	}
	// GOGC was applied by the runtime at start; setGC leaves it.
	t.Setenv("GOGC", "250")
	debug.SetGCPercent(250)
	if got := setGC(true); got != "250" || percent() != 250 {
		t.Fatalf("setGC with GOGC=250 = %s (GC percent %d), want it left at 250", got, percent())
	}
}
