package main

import (
	"syscall"

	"github.com/laurel/laurel/embedded"
)

// descriptorBudget splits the process's file descriptor limit between the embedded store's
// files and the HTTP connections, keeping some for everything else (the listener, logs,
// the scale-out store's connections), so that neither can starve the other: past its share
// the store closes files it is not using, and the server refuses connections (503).
type descriptorBudget struct {
	limit      int // RLIMIT_NOFILE; Go raises the soft limit to the hard one at start
	storeFiles int // Pebble's MaxOpenFiles
	conns      int // -max-conns by default
}

// spareDescriptors is what the budget leaves to everything but the store and connections.
const spareDescriptors = 64

func budgetOf(limit int) descriptorBudget {
	store := max(min(1000, limit/2), embedded.MinOpenFiles)
	return descriptorBudget{limit: limit, storeFiles: store, conns: max(limit-store-spareDescriptors, 1)}
}

// descriptors returns the budget of this process's limit.
func descriptors() descriptorBudget {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return budgetOf(1 << 20)
	}
	return budgetOf(int(lim.Cur))
}
