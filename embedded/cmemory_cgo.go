//go:build cgo

package embedded

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static void release_free_pages(void) { malloc_trim(0); }
#else
static void release_free_pages(void) {}
#endif
*/
import "C"

// releaseFreePages returns the C allocator's free pages in every arena (glibc's malloc_trim).
func releaseFreePages() { C.release_free_pages() }
