package embedded

import "syscall"

// hugePage is the size of a transparent huge page on x86-64 and on arm64 with 4 KiB pages.
const hugePage = 2 << 20

// faultHuge faults the whole huge pages of the size bytes at lo, memory that nothing has
// touched since it was made and that holds zeros, by writing a zero at each page's start
// (zero(off), off from lo) while the range is advised to be backed by huge pages; then it
// takes the advice back. Where the kernel has no huge pages to give, its pages are faulted
// as any are.
func faultHuge(lo, size uintptr, zero func(off uintptr)) {
	start := (lo + hugePage - 1) &^ (hugePage - 1)
	end := (lo + size) &^ (hugePage - 1)
	if start >= end {
		return
	}
	if madvise(start, end, syscall.MADV_HUGEPAGE) != nil {
		return
	}
	for p := start; p < end; p += hugePage {
		zero(p - lo)
	}
	_ = madvise(start, end, syscall.MADV_NOHUGEPAGE)
}

// madvise advises the kernel on [lo, hi), which the caller keeps alive.
func madvise(lo, hi uintptr, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}
