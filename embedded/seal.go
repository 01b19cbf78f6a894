package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
)

// Sealing moves the events since the last seal from the log to the store (eventlog.go).

// sealedValue encodes a sealed event: the event and its history point.
func sealedValue(board string, ev *event, point []byte) []byte {
	return appendSealedValue(make([]byte, 0, 48+len(point)), board, ev, point)
}

// appendSealedValue appends a sealed event's value to b.
func appendSealedValue(b []byte, board string, ev *event, point []byte) []byte {
	return append(appendEvent(b, board, ev), point...)
}

// decodeSealed decodes a sealed event and its history point (nil when it has none).
func decodeSealed(seq uint64, v []byte) (board string, ev event, point []byte, err error) {
	ev.seq = seq
	board, point, err = readEvent(v, &ev)
	if len(point) == 0 {
		point = nil
	}
	return board, ev, point, err
}

// erasure names what an operation erases: events the seal that commits it leaves out.
type erasure struct {
	boards  map[string]bool
	members map[string]bool // board 0 member
}

func (x *erasure) erases(board, member string) bool {
	return x != nil && (x.boards[board] || x.members[pairKey(board, member)])
}

// Seals run in two ways. When the log holds SealEvents events, the writer freezes them
// (sealing) and a goroutine of their own seals them while the writer goes on with new ones
// (startSeal, sealFrozen, finishSeal): the id check and History read the frozen events
// until the store shows them sealed. An operation that erases events (a deleted member or
// board) seals at once, in the writer, leaving the erased events out (seal). Operations that
// read events from the store wait for a seal in progress first (waitSeal).
//
// Either way, the sealed file goes into the store first (ingested: durable when Ingest
// returns), then one commit stores the member index and ids of its events, and the last
// sequence number sealed; then the log's records up to it are dropped. A crash before the
// commit leaves the events in the log (Open drops the ingested copies); after it, records
// that Open knows are sealed.

// maybeSeal, after each group, starts a seal when the log holds SealEvents events, or starts
// again one that failed (the disk was full: its events stay in the log meanwhile), once the
// disk has room for the sealed file beside its reserve.
func (s *Store) maybeSeal() {
	switch {
	case s.broken() || s.sealDone != nil:
	case s.sealing != nil:
		if time.Now().After(s.sealRetry) && s.disk.room(s.sealingBytes) {
			s.resumeSeal()
		}
	case len(s.recent.list) >= s.opts.SealEvents && time.Now().After(s.sealRetry):
		if !s.disk.room(s.logBytes) {
			s.sealRetry = time.Now().Add(sealRetryAfter)
			return
		}
		s.startSeal()
	}
}

// sealRetryAfter is how long a seal the disk had no room for waits before it tries again.
const sealRetryAfter = time.Second

// startSeal freezes the events since the last seal and starts sealing them. Their history
// points are committed first: every event sealed has its point.
func (s *Store) startSeal() {
	tx := s.newTxn(s.now())
	s.stageHistory(tx)
	s.commit(tx, nil)
	if s.broken() {
		return
	}
	frozen := s.recent
	frozen.tagged = s.taggedBoards()
	s.mu.Lock()
	s.sealing, s.recent = frozen, newRecentEvents(s.opts.SealEvents)
	s.mu.Unlock()
	s.sealingLog = s.logNo // the log's records through it hold the frozen events
	s.sealingBytes, s.logBytes = s.logBytes, 0
	s.resumeSeal()
}

// resumeSeal seals the frozen events on a goroutine of their own.
func (s *Store) resumeSeal() {
	frozen := s.sealing
	last := frozen.list[len(frozen.list)-1].seq
	done := make(chan error, 1)
	s.sealDone = done
	go func() {
		inBackground()
		done <- s.sealFrozen(frozen, last)
	}()
}

// sealFrozen seals the frozen events through last, outside the writer.
func (s *Store) sealFrozen(frozen *recentEvents, last uint64) error {
	start := time.Now()
	n, err := s.sealInto(frozen, nil, nil, last, nil)
	if err != nil {
		return err
	}
	s.log.Debug("sealed events", "events", n, "through", last, "took", time.Since(start))
	return nil
}

// eachSealed calls fn with the events of r that erase leaves, in order, each with its history
// point: from extra (points staged in the commit that seals, which the log never gets) or
// from the log, whose records it reads once, in order, keeping only the points read ahead
// of their events.
func (s *Store) eachSealed(r *recentEvents, extra []pointRecord, erase *erasure, fn func(board string, ev *event, point []byte) error) error {
	pending := make(map[uint64][]byte, len(extra))
	for _, p := range extra {
		pending[p.seq] = p.point
	}
	it, err := s.logDB.NewIter(&pebble.IterOptions{LowerBound: []byte{tagLog}, UpperBound: []byte{tagLog + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	valid := it.First()
	var read uint64  // the last record read
	var arena chunks // no point is copied twice
	keep := func(seq uint64, point []byte) { pending[seq] = append(arena.take(len(point)), point...) }
	var ev event // one for all: fn's pointer to it makes it escape
	for i := range r.list {
		var board string
		board, ev = r.view(int32(i)) // fn copies what it keeps
		// Points are logged in the order of their events: this one's record, or an
		// earlier one, is next.
		for want := r.list[i].point; want > read && valid; valid = it.Next() {
			if err := eachLogPoint(it.Value(), keep); err != nil {
				return err
			}
			read = readU64(it.Key()[1:])
		}
		point := pending[ev.seq]
		delete(pending, ev.seq)
		if erase.erases(board, ev.member) {
			continue
		}
		if err := fn(board, &ev, point); err != nil {
			return err
		}
	}
	return it.Error()
}

// finishSeal ends the seal in progress, in the writer: readers see the sealed events in the
// store from now on, and the log's sealed records go.
func (s *Store) finishSeal(err error) {
	s.sealDone = nil
	if err != nil {
		// The events stay in the log and frozen in memory: nothing is lost, and the seal
		// is tried again (the disk may be full; its guard refuses writes meanwhile).
		s.log.Warn("sealing events failed; they stay in the log, and the seal is tried again", "events", len(s.sealing.list), "err", err)
		s.sealRetry = time.Now().Add(sealRetryAfter)
		return
	}
	last := s.sealing.list[len(s.sealing.list)-1].seq
	s.idRuns = append(s.idRuns, s.sealing.idRun(last))
	s.mu.Lock()
	s.snap.Close()
	s.snap = s.db.NewSnapshot()
	s.sealing, s.sealedTo = nil, last
	s.mu.Unlock()
	s.dropLog(s.sealingLog)
	s.releaseCMemory() // the cache's blocks the reads evicted
	s.maybeMergeIDs()
}

// waitSeal waits for the seal in progress, if any, and ends it; a seal that failed before is
// tried once more. It fails when events are left frozen: operations that read events from the
// store must not run then.
func (s *Store) waitSeal() error {
	if s.sealDone == nil && s.sealing != nil && s.disk.room(s.sealingBytes) {
		s.resumeSeal()
	}
	if s.sealDone != nil {
		s.finishSeal(<-s.sealDone)
	}
	if s.sealing != nil {
		return errSealPending
	}
	return nil
}

var errSealPending = laurel.Errorf(laurel.EUnavailable, "the store could not move its recent events out of its log (is the disk full?); nothing was changed; try again later")

// seal commits tx together with the sealing of the events since the last seal, less those
// tx erases, in the writer. Every event sealed has its history point: the caller has staged
// the points pending in tx (they go to the store with their events, not to the log).
func (s *Store) seal(tx *txn, ops []*op) {
	last := s.seq
	if n := len(s.recent.list); n > 0 {
		last = max(last, s.recent.list[n-1].seq)
	}
	s.recent.tagged = s.taggedBoards()
	if _, err := s.sealInto(s.recent, tx.points, tx.erase, last, tx.batch); err != nil {
		// Nothing of the operation is stored; the store goes on (the disk may be full).
		s.log.Warn("sealing events for an erasure failed", "err", err)
		answerOps(laurel.Errorf(laurel.EUnavailable, "the store could not erase from disk now (is the disk full?); nothing was changed; try again later"), ops)
		tx.discard()
		return
	}
	tx.points = nil
	if len(s.recent.list) > 0 {
		run := s.recent.idRun(last)
		tx.onCommit(nil, func() { s.idRuns = append(s.idRuns, run) })
	}
	tx.onCommit(nil, func() { s.recent, s.sealedTo = newRecentEvents(s.opts.SealEvents), last })
	logged := s.logNo // the seal's commit logs nothing
	tx.afterCommit = func() { s.dropLog(logged) }
	s.commit(tx, ops)
}

// sealInto seals the events of r that erase leaves: it writes them, with their points, to one
// sorted file, their member index to another and their ids to a third, and ingests the
// three at once, so that none of these records passes through a memtable (a skiplist insert
// costs some 2 µs a key on a 64 MiB memtable, and the index and ids were two of the five keys
// an event took there); then the last sequence number sealed, which makes the seal count,
// goes in final (the commit that seals, which the caller makes) or in a synced batch of its
// own. A crash before that leaves index records of events still in the log: Open drops the
// sealed copies they point to (readers skip what they point to no more), and the next seal
// writes them again. An ingested file is as if written at its ingestion: it shadows what the
// memtable holds of its keys, as a batch committed then would (while a seal runs, only
// submits commit, and they write no index or id record).
func (s *Store) sealInto(r *recentEvents, extra []pointRecord, erase *erasure, last uint64, final *pebble.Batch) (int, error) {
	fs := s.opts.FS
	paths := []string{
		fs.PathJoin(s.dir, fmt.Sprintf("sealing-%016x.sst", last)),
		fs.PathJoin(s.dir, fmt.Sprintf("sealing-%016x-index.sst", last)),
		fs.PathJoin(s.dir, fmt.Sprintf("sealing-%016x-ids.sst", last)),
		fs.PathJoin(s.dir, fmt.Sprintf("sealing-%016x-times.sst", last)),
	}
	defer func() {
		for _, path := range paths {
			fs.Remove(path) // ingested files were linked into the store: these names are ours
		}
	}()
	w, err := s.newTable(paths[0])
	if err != nil {
		return 0, err
	}
	// Arenas sized for short board, member and id names: a member index record is 11 bytes
	// and the names, an id record 27 and the board's and its id (idruns.go). The index is
	// written a record a member (writeSorted).
	index := newSortedRun(len(r.list), 32)
	index.bySeq = true
	ids := newSortedRun(len(r.list), 64)
	times := newSortedRun(0, 0) // of the boards that carry tags (tags.go)
	run := r.idRun(last)
	n := 0
	var k, v []byte // the table copies them: one buffer each serves every event
	err = s.eachSealed(r, extra, erase, func(board string, ev *event, point []byte) error {
		k, v = appendSealedKey(k[:0], ev.seq, board), appendSealedValue(v[:0], board, ev, point)
		if err := w.Set(k, v); err != nil {
			return err
		}
		n++
		start := len(index.arena)
		index.arena = appendEventsKey(index.arena, board, ev.member, ev.seq)
		index.add(start, len(index.arena))
		if r.tagged[board] {
			start = len(times.arena)
			times.arena = appendByTimeKey(times.arena, board, ev.member, ev.ts, ev.seq)
			times.add(start, len(times.arena))
		}
		if ev.id != "" && ev.flags&flagRetracted == 0 {
			start = len(ids.arena)
			ids.arena = run.appendKey(ids.arena, board, ev.id)
			keyEnd := len(ids.arena)
			ids.arena = ev.appendID(ids.arena)
			ids.add(start, keyEnd)
		}
		return nil
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	ingest := []string{paths[0]}
	for i, run := range []*sortedRun{index, ids, times} {
		if err == nil && len(run.recs) > 0 {
			err = s.writeSorted(paths[1+i], run)
			ingest = append(ingest, paths[1+i])
		}
	}
	if err != nil {
		return 0, err
	}
	if n > 0 {
		if err := s.db.Ingest(context.Background(), ingest); err != nil {
			return 0, err
		}
	}
	if final != nil {
		return n, final.Set([]byte{tagSealedTo}, appendU64(nil, last), nil)
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	if err = batch.Set([]byte{tagSealedTo}, appendU64(nil, last), nil); err == nil {
		err = batch.Commit(pebble.Sync)
	}
	return n, err
}

// sortedRun is the records of a file a seal writes, in the order they come: their keys and
// values back to back in one arena, each record where its own are. A seal of 65536 events
// holds two, so they are kept small: a record takes 32 bytes and no allocation of its own.
type sortedRun struct {
	arena []byte
	recs  []runRecord
	// bySeq: the keys end in a sequence number, and those that differ in it alone are
	// written as one record (the member index).
	bySeq bool
}

// runRecord is a record of a sortedRun: its key at off, its value right after, and its
// place among the records, which decides between equal keys.
type runRecord struct {
	off            int
	klen, vlen, at uint32
	head           uint64 // set by sort: 8 bytes of the key past what every key of the run shares
}

func newSortedRun(records, bytesEach int) *sortedRun {
	return &sortedRun{arena: make([]byte, 0, records*bytesEach), recs: make([]runRecord, 0, records)}
}

// add adds the record just appended to the arena from start: its key ends at keyEnd, its
// value is the rest.
func (r *sortedRun) add(start, keyEnd int) {
	r.recs = append(r.recs, runRecord{start, uint32(keyEnd - start), uint32(len(r.arena) - keyEnd), uint32(len(r.recs)), 0})
}

func (r *sortedRun) keyOf(rec runRecord) []byte { return r.arena[rec.off : rec.off+int(rec.klen)] }

func (r *sortedRun) valueOf(rec runRecord) []byte {
	k := rec.off + int(rec.klen)
	return r.arena[k : k+int(rec.vlen)]
}

// sort sorts the records by key and, between equal keys, by place, and returns them. The
// keys share a prefix (their tag and board): the 8 bytes after it, held in the record as a
// number, order nearly every pair. So a radix sort puts the records in the order of those
// first, keeping places in order, and only the records whose 8 bytes are equal (a member's
// events, in the member index) are compared whole: some 6 ms for a seal's 65536 events,
// where a comparison sort of all of them took 18 (BenchmarkSortRun).
func (r *sortedRun) sort() []runRecord {
	recs := r.recs
	shared := 0
	if len(recs) > 0 {
		first := r.keyOf(recs[0])
		shared = len(first)
		for _, rec := range recs[1:] {
			k := r.keyOf(rec)
			n := 0
			for n < shared && n < len(k) && k[n] == first[n] {
				n++
			}
			shared = n
		}
	}
	for i := range recs {
		var head [8]byte
		copy(head[:], r.keyOf(recs[i])[shared:])
		recs[i].head = binary.BigEndian.Uint64(head[:])
	}
	recs = byHead(recs, make([]runRecord, len(recs)))
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].head == recs[i].head {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(recs[i:j], func(a, b runRecord) int {
				return cmp.Or(bytes.Compare(r.keyOf(a)[shared:], r.keyOf(b)[shared:]), cmp.Compare(a.at, b.at))
			})
		}
		i = j
	}
	r.recs = recs
	return recs
}

// byHead orders recs by head, records with equal heads in the order they came: a radix sort,
// a byte a pass from the lowest, with tmp (as long as recs) to move them into. A byte that
// every head shares takes no pass. It returns the sorted records: in recs or in tmp.
func byHead(recs, tmp []runRecord) []runRecord {
	var counts [8][256]int
	for i := range recs {
		h := recs[i].head
		for d := range counts {
			counts[d][byte(h>>(8*d))]++
		}
	}
	for d := range counts {
		c := &counts[d]
		if len(recs) == 0 || c[byte(recs[0].head>>(8*d))] == len(recs) {
			continue
		}
		at := 0
		for b, n := range c {
			c[b], at = at, at+n
		}
		for _, rec := range recs {
			b := byte(rec.head >> (8 * d))
			tmp[c[b]] = rec
			c[b]++
		}
		recs, tmp = tmp, recs
	}
	return recs
}

// newTable creates a table file at path for the store to ingest.
func (s *Store) newTable(path string) (*sstable.Writer, error) {
	f, err := s.opts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.pebbleOpts.MakeWriterOptions(6, s.db.TableFormat())), nil
}

// writeSorted writes run's records to a table at path in key order; of records with one
// key, the last one (sort).
//
// A run by seq writes the records whose keys differ in their sequence number alone as one:
// the first key, its value the later numbers (keys.go). A member's events in a seal then
// take one record of the member index, not one each: under a skew like laurel bench's, a
// quarter as many, where the member index, a record an event, would be two thirds of what
// each compaction of level 0 rewrites (docs/benchmarks-log.md, "A member's events in a seal,
// one record").
func (s *Store) writeSorted(path string, run *sortedRun) error {
	recs := run.sort()
	w, err := s.newTable(path)
	if err != nil {
		return err
	}
	var later []byte
	for i := 0; i < len(recs) && err == nil; i++ {
		k, v := run.keyOf(recs[i]), run.valueOf(recs[i])
		if run.bySeq {
			later = later[:0]
			last := readU64(k[len(k)-8:])
			for i+1 < len(recs) {
				next := run.keyOf(recs[i+1])
				if !bytes.Equal(next[:len(next)-8], k[:len(k)-8]) {
					break
				}
				i++
				if seq := readU64(next[len(next)-8:]); seq > last {
					later = binary.AppendUvarint(later, seq-last)
					last = seq
				}
			}
			v = later
		} else if i+1 < len(recs) && bytes.Equal(k, run.keyOf(recs[i+1])) {
			continue
		}
		err = w.Set(k, v)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// dropLog deletes the log's records through number n, sealed now: without a sync, since Open
// knows them for sealed if they come back.
func (s *Store) dropLog(n uint64) {
	if err := s.logDB.DeleteRange(logKey(0), logKey(n+1), pebble.NoSync); err != nil {
		s.fail(err)
	}
}

// removeSealing removes the files of seals that a crash cut short before their ingestion.
func removeSealing(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, "sealing-") && strings.HasSuffix(name, ".sst") {
			if err := fs.Remove(fs.PathJoin(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// failOps answers ops with err, after the store failed with it.
func (s *Store) failOps(err error, ops []*op) {
	s.fail(err)
	answerOps(s.failedError(), ops)
}

// failedError is what a write gets once the store has failed (its cause is in the log):
// unavailable, since nothing of it was stored, nor will be until a restart.
func (s *Store) failedError() error {
	if err := s.failed.Load(); err != nil && errors.Is(*err, syscall.ENOSPC) {
		return laurel.Errorf(laurel.EUnavailable, "the store's disk filled up faster than its reserve could be kept; nothing was stored; free space and restart laurel")
	}
	return laurel.Errorf(laurel.EUnavailable, "the store failed; nothing was stored; see the server log")
}

// answerOps answers ops with err, but those that failed on their own already.
func answerOps(err error, ops []*op) {
	for _, o := range ops {
		if o.err == nil {
			o.err = err
		}
		close(o.done)
	}
}
