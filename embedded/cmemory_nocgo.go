//go:build !cgo

package embedded

// releaseFreePages has nothing to do: without cgo, Pebble's memory is the Go heap's.
func releaseFreePages() {}
