package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// store is what the driver needs from each candidate.
type store interface {
	put(keys, vals [][]byte, sync bool) error // one atomic batch
	scan(prefix []byte, fn func(val []byte)) error
	variants() []variant
	settle(flush bool) // let background work (compactions) finish; flush: write out memory too
	close() error
}

type variant struct {
	name string
	run  func(conc int, d time.Duration, members int) result
}

type recovery struct {
	Records                   int
	LoadSec, OpenSec, ScanSec float64 // scan after the page cache was emptied: a reboot
	WarmScanSec               float64 // scan again, cached: a kill -9
	DataBytes, DiskBytes      int64   // apparent size; allocated blocks (Pebble preallocates its WAL)
	LoadWriteBytes            int64
	LostUpdates               map[string]int64
}

type storeReport struct {
	Writes   []result
	Recovery *recovery
	Mem      mem
	// BytesPerWrite is over all write variants, background work included
	// (the store settles, and finally flushes, inside the count).
	BytesPerWrite float64
}

const (
	loadBatch = 100_000
	rounds    = 3 // per point, each a reference run then a store run
)

// runStore loads the recovery data set, times a cold open and full ordered
// scan, then runs every write variant on the loaded store, so the writes'
// point reads and read-modify-writes go to a store of realistic size.
func runStore(name, root string, open func(dir string) (store, error), opt options) (*storeReport, error) {
	dir, err := os.MkdirTemp(root, "storebench-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	dir = filepath.Join(dir, "db")
	rec := &recovery{LostUpdates: map[string]int64{}}
	s, err := open(dir)
	if err != nil {
		return nil, err
	}

	// Load 10 aggregates per member, in key order, in big unsynced batches:
	// not how laurel writes, but the scan only needs the data there. bbolt
	// leaves pages split in key order half full (its default FillPercent), a
	// little emptier than random inserts (~70%) would. Values vary as real
	// scores and times do, so Pebble's compression is not flattered.
	perWindow := opt.records / len(recoveryWindows)
	rec.Records = perWindow * len(recoveryWindows)
	t, io0 := time.Now(), procIO()
	r := rand.New(rand.NewPCG(1, 2))
	var keys, vals [][]byte
	for _, w := range recoveryWindows {
		for m := range perWindow {
			n := 1 + r.Int64N(50)
			keys = append(keys, aggKey(w, m))
			vals = append(vals, agg{score: r.Int64N(1_000_000), reachedAt: today*86_400_000 + r.Int64N(86_400_000), count: n, version: n}.encode())
			if len(keys) == loadBatch {
				if err := s.put(keys, vals, false); err != nil {
					return nil, err
				}
				keys, vals = keys[:0], vals[:0]
			}
		}
	}
	if err := s.put(keys, vals, true); err != nil {
		return nil, err
	}
	if err := s.close(); err != nil {
		return nil, err
	}
	rec.LoadSec, rec.LoadWriteBytes = time.Since(t).Seconds(), procIO()-io0
	rec.DataBytes, rec.DiskBytes = dirSize(dir)

	if err := evictCache(dir); err != nil {
		return nil, err
	}
	t = time.Now()
	if s, err = open(dir); err != nil {
		return nil, err
	}
	rec.OpenSec = time.Since(t).Seconds()
	for i, sec := range []*float64{&rec.ScanSec, &rec.WarmScanSec} {
		t, n := time.Now(), 0
		if err := s.scan(nil, func([]byte) { n++ }); err != nil {
			return nil, err
		}
		*sec = time.Since(t).Seconds()
		if n != rec.Records {
			return nil, fmt.Errorf("scan %d read %d records, want %d", i, n, rec.Records)
		}
	}

	// The machine is shared and its disk's speed drifts several-fold within
	// minutes, so each point is measured in rounds that alternate with a
	// reference on the same file system, and reported as a ratio to it.
	ref, err := openRawLog(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer ref.close()
	s.settle(false) // the load's compactions are not the writes' cost

	// Bytes written are counted while the store writes or settles, never while
	// the reference runs: the store settles first, so its background work
	// lands in its own count.
	rep := &storeReport{Recovery: rec}
	var diskBytes, total int64
	counted := func(f func()) {
		io := procIO()
		f()
		diskBytes += procIO() - io
	}
	for _, v := range s.variants() {
		before, err := countAll(s)
		if err != nil {
			return nil, err
		}
		var writes int64
		for _, c := range opt.concs {
			var r, rr result
			for range rounds {
				counted(func() { s.settle(false) })
				rr.add(ref.run(c, opt.dur/2/rounds, opt.members))
				counted(func() { r.add(v.run(c, opt.dur/rounds, opt.members)) })
			}
			r.finish()
			rr.finish()
			r.Store, r.Variant, r.Ref = name, v.name, &rr
			rep.Writes = append(rep.Writes, r)
			writes += r.Writes
		}
		// Every write adds 1 to its member's all-time count: a shortfall is
		// an update lost to a read-modify-write race.
		after, err := countAll(s)
		if err != nil {
			return nil, err
		}
		rec.LostUpdates[v.name] = before + writes - after
		total += writes
	}
	counted(func() { s.settle(true) })
	rep.BytesPerWrite = float64(diskBytes) / float64(total)
	rep.Mem = readMem()
	return rep, s.close()
}

func countAll(s store) (n int64, err error) {
	k := aggKey(current[0], 0)
	prefix := k[:bytes.LastIndexByte(k, '/')+1]
	err = s.scan(prefix, func(v []byte) { n += decodeAgg(v).count })
	return n, err
}
