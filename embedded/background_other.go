//go:build !linux

package embedded

// lowerThread does nothing where threads cannot be ranked one by one.
func lowerThread(int) {}
