//go:build !linux

package embedded

// hugePage is what the faults of hugeSlice would be made of where huge pages are advised.
const hugePage = 2 << 20

// faultHuge leaves the pages to be faulted as the system does: huge pages are advised on Linux.
func faultHuge(lo, size uintptr, zero func(off uintptr)) {}
