package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// procIO is the bytes this process has handed to write system calls
// (/proc/self/io wchar): WAL, pages, flushes and compactions alike, so write
// amplification is compared on one scale. Not write_bytes, the bytes sent to
// storage: it counts a whole large folio each time one 4 KiB page in it is
// dirtied, which inflates bbolt's figure a hundredfold once its file was read
// with readahead. The file system adds its journal and the rewrite of
// partly written pages on top, alike for all.
func procIO() int64 { return procField("/proc/self/io", "wchar:") }

func procField(file, name string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), name); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}

// mem is read at the end of a store's run; each store runs in its own process
// so the figures are its own. RssFile counts bbolt's mmap of its file.
type mem struct {
	PeakRSS, RSSAnon, RSSFile, GoHeap int64
}

func readMem() mem {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	const kb = 1024
	return mem{
		PeakRSS: procField("/proc/self/status", "VmHWM:") * kb,
		RSSAnon: procField("/proc/self/status", "RssAnon:") * kb,
		RSSFile: procField("/proc/self/status", "RssFile:") * kb,
		GoHeap:  int64(ms.HeapInuse),
	}
}

// dirSize is the apparent size of dir's files and the blocks allocated to
// them: stores grow or preallocate files ahead of use.
func dirSize(dir string) (size, alloc int64) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
				alloc += fi.Sys().(*syscall.Stat_t).Blocks * 512
			}
		}
		return nil
	})
	return size, alloc
}

// evictCache drops dir's files from the page cache, so the recovery scan
// reads from disk as after a reboot (not just a kill -9). It needs no privilege,
// unlike /proc/sys/vm/drop_caches.
func evictCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return err
		}
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
}
