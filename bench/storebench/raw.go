package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// rawLog is the floor no store can beat on this disk: the same bytes as a
// write, appended to a plain file and made durable with one fdatasync per
// group. At concurrency 1 it is write+fdatasync per record. The file grows,
// so each fdatasync also commits its new size, as a log that is not
// preallocated must.
type rawLog struct{ f *os.File }

func openRawLog(dir string) (*rawLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, "raw.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return &rawLog{f}, err
}

func (l *rawLog) run(conc int, d time.Duration, members int) result {
	return runGroup(conc, d, members, func(ws []*write) func() error {
		var buf []byte
		for _, w := range ws {
			buf = append(buf, w.bytes()...)
		}
		if _, err := l.f.Write(buf); err != nil {
			return done(err)
		}
		return done(unix.Fdatasync(int(l.f.Fd())))
	})
}

func (l *rawLog) close() error { return l.f.Close() }

// rawRecovery is the floor for the recovery scan: the same records as one
// flat file, read sequentially from disk, then again from the page cache.
func rawRecovery(dir string, records int) (*recovery, error) {
	path := filepath.Join(dir, "raw.flat")
	rec := &recovery{Records: records}
	t, io0 := time.Now(), procIO()
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	val := agg{count: 1}.encode()
	for m := range records {
		w.Write(aggKey(current[0], m))
		w.Write(val)
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return nil, err
	}
	rec.LoadSec, rec.LoadWriteBytes = time.Since(t).Seconds(), procIO()-io0
	rec.DataBytes, rec.DiskBytes = dirSize(path)
	if err := evictCache(path); err != nil {
		return nil, err
	}
	for _, sec := range []*float64{&rec.ScanSec, &rec.WarmScanSec} {
		t := time.Now()
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, bufio.NewReaderSize(f, 1<<20))
		f.Close()
		if err != nil {
			return nil, err
		}
		*sec = time.Since(t).Seconds()
	}
	return rec, os.Remove(path)
}
