package embedded

import "unsafe"

// Open makes a few gigabytes of memory for a large store at once (the members' table and ids,
// the spans' chunks, the sort's arrays: some 5 GB at 100M entries, beside the trees' leaves),
// and the kernel faults fresh memory in a page at a time: some 2M faults of 4 KiB pages, a
// third of the CPU of a 100M restart on a virtual machine where each trap is dear. Faulted
// 2 MiB at a time, the same memory takes a third to a half of the CPU (docs/benchmarks.md,
// "Restart and replay"). Linux backs memory with such pages where it is advised to (transparent huge pages
// in "madvise" mode, the default of most distributions, or "always"). The advice is held only
// while the pages are first touched, then taken back: the kernel is not left asked to gather
// pages the heap holds sparsely into huge ones, and the parts of a huge page the collector
// later frees are returned to the system as 4 KiB pages are.

// hugeFaultMin is the least memory worth faulting in huge pages: it holds one whole at least.
const hugeFaultMin = 2 * hugePage

// hugeSlice returns make([]T, n), whose memory, when large, is faulted in huge pages.
func hugeSlice[T any](n int) []T {
	s := make([]T, n)
	size := uintptr(n) * unsafe.Sizeof(*new(T))
	if size >= hugeFaultMin {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size)
		faultHuge(uintptr(unsafe.Pointer(&b[0])), size, func(off uintptr) { b[off] = 0 })
	}
	return s
}

// growHuge is slices.Grow(s, more), the memory of a new array faulted in huge pages when it is
// large (hugeSlice).
func growHuge[T any](s []T, more int) []T {
	if cap(s)-len(s) >= more {
		return s
	}
	g := hugeSlice[T](len(s) + more)[:len(s)]
	copy(g, s)
	return g
}

// faultHugeArrays faults in huge pages the memory of arrays that lie back to back, new and
// zero (a span's chunks made at once).
func faultHugeArrays[A any](arrays []*A) {
	size := unsafe.Sizeof(*new(A))
	for i := 0; i < len(arrays); {
		j := i + 1
		for j < len(arrays) && uintptr(unsafe.Pointer(arrays[j])) == uintptr(unsafe.Pointer(arrays[j-1]))+size {
			j++
		}
		if run := arrays[i:j]; uintptr(len(run))*size >= hugeFaultMin {
			faultHuge(uintptr(unsafe.Pointer(run[0])), uintptr(len(run))*size, func(off uintptr) {
				a := run[off/size]
				unsafe.Slice((*byte)(unsafe.Pointer(a)), size)[off%size] = 0
			})
		}
		i = j
	}
}
