package embedded

// Built with cgo, Pebble allocates its block cache and memtables with C's calloc, from
// whichever thread the goroutine asking runs on, and glibc gives each such thread an arena of
// its own. A merge of sealed runs or a seal reads tens of MB through the cache from goroutines
// of their own; the blocks it evicts are freed, but glibc keeps their pages in those arenas,
// resident, until something trims them: 20–25 B an entry more resident at 1M members once
// merges of sealed events came (docs/benchmarks.md, "Where memory goes"), none of it in use.
// Built without cgo (the container image), Pebble's memory is the Go heap's, and there is
// nothing to release.

// releaseCMemory hands the pages the C allocator holds free back to the system, on a
// goroutine of its own that Close waits for; a release under way makes another unneeded.
// glibc's walk of its arenas is 4% of the server's CPU paced at 5 000 events a second at 1M
// members, in bursts after each seal, so it runs below the requests, as seals do.
func (s *Store) releaseCMemory() {
	if !s.releasing.CompareAndSwap(false, true) {
		return
	}
	s.loading.Go(func() {
		inBackground()
		defer s.releasing.Store(false)
		releaseFreePages()
	})
}
