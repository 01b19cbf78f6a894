package main

import (
	"runtime"
	"testing"
)

// TestProcs: serve on the embedded store runs on one processor more than Go's default unless
// told otherwise, on the scale-out store on Go's default, and starting it again (as the tests
// do in one process) does not add another.
func TestProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	t.Setenv("GOMAXPROCS", "")
	for range 2 {
		if got := setProcs(0, false); got != goDefaultProcs+1 {
			t.Fatalf("setProcs(0) on the embedded store = %d, want Go's default %d + 1", got, goDefaultProcs)
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
