package embedded

import (
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// Checkpointed aggregates.
//
// Open calendar periods and all are whole in memory (each span's slots), and so is each
// rolling window's newest bucket, where nearly every event falls; so a submit does not store
// their aggregates: its group's events go to the log (eventlog.go). The writer stores an
// aggregate a submit changed later, once for all the events that change it meanwhile: when it
// has been dirty for CheckpointLag events, or when its bucket stops being the newest
// (retireBucket). Those of open periods and all go to the checkpoint file (cpfile.go), the
// buckets' to Pebble. It stores with the aggregate the last sequence number the aggregate
// counts, and stores the first sequence number that replay must start from (below it, every
// event is counted in every stored aggregate). Every other change of an aggregate (a
// retraction, a deletion, a window built, an older bucket) is stored at once, with its number
// too.
//
// Open recovers the stored aggregates and then replays the log from that number: each event
// still there and not retracted is added, in sequence, to the open periods, all and the
// buckets that do not count it yet. That is at most CheckpointLag events and the rest of
// their groups, read from the store where they were sealed since, then from the log.

// dirtyEntry is an aggregate in memory that the store does not hold yet: member h's in an
// open span or a rolling window's newest bucket, named by its target in checkpoints. Eight
// bytes: the queue holds some five for each event of the last CheckpointLag.
type dirtyEntry struct {
	target uint32 // index in checkpoints.targets, plus one
	h      uint32
}

// dirtyMarks is what a span or a rolling window's bucket keeps of its aggregates that the
// store does not hold yet.
type dirtyMarks struct {
	dirty  bitset // their handles
	target uint32 // while entries of the queue name it: its index in checkpoints.targets, plus one
}

// dirtyTarget is a span or a bucket that entries of the queue are in, and how many.
type dirtyTarget struct {
	b     *board
	w     *window
	sp    *span   // or nil, and
	bk    *bucket // the bucket
	marks *dirtyMarks
	refs  int
}

// seqRun is a run of entries of the queue, in a row, whose first change was in a group whose
// first sequence number is seq: a group's entries share it, so it is kept once a run.
type seqRun struct {
	seq uint64
	n   int
}

// checkpoints is the writer's account of what the store does not hold yet.
type checkpoints struct {
	queue      dirtyQueue
	runs       []seqRun // the queue's, oldest first, from runsHead on
	runsHead   int
	targets    []dirtyTarget
	free       []uint32 // targets no entry names, to use again
	replayFrom uint64   // as stored
}

// dirtyQueue holds dirty entries oldest first, in chunks of a fixed size: entries leave from
// the front, which one slice could give back only by copying what is left, and a chunk whose
// entries have all left is used again for the next. So the queue never copies an entry, and
// holds at most a chunk and its spares beyond its entries.
type dirtyQueue struct {
	chunks [][]dirtyEntry // the first from head on; none when the queue is empty
	head   int
	spare  [][]dirtyEntry // emptied chunks, up to maxSpareChunks
}

const (
	dirtyChunk     = 4096 // entries of a chunk: 32 KiB
	maxSpareChunks = 2    // a checkpoint empties a few at once (a group of 2048 events dirties some 3000 entries)
)

func (q *dirtyQueue) push(d dirtyEntry) {
	if n := len(q.chunks); n == 0 || len(q.chunks[n-1]) == dirtyChunk {
		var c []dirtyEntry
		if n := len(q.spare); n > 0 {
			c, q.spare = q.spare[n-1], q.spare[:n-1]
		} else {
			c = make([]dirtyEntry, 0, dirtyChunk)
		}
		q.chunks = append(q.chunks, c)
	}
	last := &q.chunks[len(q.chunks)-1]
	*last = append(*last, d)
}

// oldest returns the oldest entry; false when the queue is empty.
func (q *dirtyQueue) oldest() (dirtyEntry, bool) {
	if len(q.chunks) == 0 {
		return dirtyEntry{}, false
	}
	return q.chunks[0][q.head], true
}

// pop takes the oldest entry out.
func (q *dirtyQueue) pop() {
	first := q.chunks[0]
	if q.head++; q.head == len(first) {
		q.chunks[0], q.chunks, q.head = nil, q.chunks[1:], 0
		if len(q.spare) < maxSpareChunks {
			q.spare = append(q.spare, first[:0])
		}
		if len(q.chunks) == 0 {
			q.chunks = q.chunks[:0:0] // nothing left: the array goes too
		}
	}
}

// markDirty notes that the aggregate of handle h in sp (or bk) changed in a group whose first
// sequence number is seq and is not stored yet. The writer calls it, under the write lock.
func (s *Store) markDirty(b *board, w *window, sp *span, bk *bucket, h uint32, seq uint64) {
	var marks *dirtyMarks
	if sp != nil {
		marks = &sp.dirtyMarks
	} else {
		marks = &bk.dirtyMarks
	}
	if marks.dirty.has(h) {
		return
	}
	marks.dirty.add(h)
	cp := &s.cp
	if marks.target == 0 {
		t := dirtyTarget{b: b, w: w, sp: sp, bk: bk, marks: marks}
		if n := len(cp.free); n > 0 {
			marks.target, cp.free = cp.free[n-1], cp.free[:n-1]
			cp.targets[marks.target-1] = t
		} else {
			cp.targets = append(cp.targets, t)
			marks.target = uint32(len(cp.targets))
		}
	}
	cp.targets[marks.target-1].refs++
	cp.queue.push(dirtyEntry{marks.target, h})
	if n := len(cp.runs); n > cp.runsHead && cp.runs[n-1].seq == seq {
		cp.runs[n-1].n++
	} else {
		cp.runs = append(cp.runs, seqRun{seq, 1})
	}
}

// oldest returns the oldest dirty entry and the sequence number of its run; false when there
// is none.
func (cp *checkpoints) oldest() (dirtyEntry, uint64, bool) {
	d, ok := cp.queue.oldest()
	if !ok {
		return d, 0, false
	}
	return d, cp.runs[cp.runsHead].seq, true
}

// pop takes the oldest entry, d, out, and forgets its target once no entry names it: what is
// gone must not keep its span or board alive.
func (cp *checkpoints) pop(d dirtyEntry) {
	cp.queue.pop()
	if r := &cp.runs[cp.runsHead]; r.n > 1 {
		r.n--
	} else if cp.runsHead++; cp.runsHead == len(cp.runs) {
		cp.runs, cp.runsHead = cp.runs[:0], 0
	} else if cp.runsHead >= 64 && 2*cp.runsHead >= len(cp.runs) {
		cp.runs = cp.runs[:copy(cp.runs, cp.runs[cp.runsHead:])]
		cp.runsHead = 0
	}
	t := &cp.targets[d.target-1]
	if t.refs--; t.refs == 0 {
		t.marks.target = 0
		*t = dirtyTarget{}
		cp.free = append(cp.free, d.target)
	}
}

// checkpoint stages, first in a new group's batch, the aggregates dirty for at least
// CheckpointLag events (all of them when all is set), as memory holds them; then the number
// replay starts from. Memory counts every event up to s.seq: the group's own changes come
// later in the batch, and win.
func (s *Store) checkpoint(tx *txn, all bool) {
	for {
		d, seq, ok := s.cp.oldest()
		if !ok || !all && seq+uint64(s.opts.CheckpointLag) > s.seq {
			break
		}
		t := s.cp.targets[d.target-1]
		s.cp.pop(d)
		if !t.marks.dirty.has(d.h) {
			continue // stored since: its bucket stopped being the newest (retireBucket)
		}
		t.marks.dirty.remove(d.h)
		if !s.stillOpen(t) {
			continue // its period closed, or its window or board went: nothing to store
		}
		start, slots := t.entry()
		v, ok := slots.get(d.h)
		if member := t.b.members.name(d.h); t.sp != nil {
			tx.spanAgg(t.b.cfg.ID, t.w.name, start, member, aggregate(v), ok, s.seq)
		} else {
			tx.setAgg(aggKey(t.b.cfg.ID, t.w.name, start, member), aggregate(v), ok, s.seq)
		}
	}
	from := s.seq + 1
	if _, seq, ok := s.cp.oldest(); ok {
		from = seq
	}
	if from == s.cp.replayFrom || len(s.recent.list) == 0 {
		return // nothing new; with nothing in the log, where replay starts does not matter
	}
	tx.set([]byte{tagReplay}, appendU64(nil, from))
	tx.onCommitBooks(func() { s.cp.replayFrom = from })
}

// entry returns where t's aggregates are in memory: its span's or bucket's start and slots.
func (t *dirtyTarget) entry() (int64, *slots) {
	if t.sp != nil {
		return t.sp.start, &t.sp.slots
	}
	return t.bk.start, &t.bk.slots
}

// replayedBucket is a rolling window's bucket aggregate of a member as replay reads and
// changes it.
type replayedBucket struct {
	a       aggregate
	present bool
	asOf    uint64
	added   bool
}

// replayedEvents returns the events that replay goes through, in sequence: those sealed from
// the number from on, then those in the log, less those retracted.
func (s *Store) replayedEvents(from uint64) ([]loggedEvent, error) {
	sealed, err := s.sealedThrough()
	if err != nil {
		return nil, err
	}
	var events []loggedEvent
	if from <= sealed {
		// The retractions of these events, read by range, board by board: a point read
		// each was most of a replay.
		retracted := make(map[uint64]bool)
		for id := range s.boards {
			err := scan(s.db, retractKey(id, from), retractKey(id, sealed+1), func(k, _ []byte) error {
				retracted[readU64(k[len(k)-8:])] = true
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		err := scan(s.db, sealedKey(from, ""), sealedKey(sealed+1, ""), func(k, v []byte) error {
			board, ev, _, err := decodeSealed(readU64(k[1:]), v)
			if err == nil && ev.flags&flagRetracted == 0 && !retracted[ev.seq] {
				events = append(events, loggedEvent{board, ev})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range s.recent.list {
		if s.recent.list[i].seq >= from {
			if board, ev := s.recent.at(int32(i)); ev.flags&flagRetracted == 0 {
				events = append(events, loggedEvent{board, ev})
			}
		}
	}
	return events, nil
}

// readBuckets reads into buckets the stored bucket aggregate of every member and bucket of a
// rolling window that events fall in, in key order through one iterator: read one by one in
// event order, they would be a point read each, most of what replay costs. A bucket stored without
// a number counts every event through bucketsAsOf.
func (s *Store) readBuckets(events []loggedEvent, buckets map[string]*replayedBucket, bucketsAsOf uint64) error {
	var keys []string
	for _, be := range events {
		b := s.boards[be.board]
		if b == nil {
			continue
		}
		for _, w := range b.windows {
			if w.w.IsRolling() {
				start, _ := b.cfg.Calendar().SpanOf(w.w, be.ts)
				k := string(aggKey(b.cfg.ID, w.name, start, be.member))
				if buckets[k] == nil {
					buckets[k] = &replayedBucket{}
					keys = append(keys, k)
				}
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	pr, err := newPointReader(s.db)
	if err != nil {
		return err
	}
	defer pr.close()
	for _, k := range keys {
		v, ok, err := pr.get([]byte(k))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		rb := buckets[k]
		rb.present = true
		if rb.a, rb.asOf, err = decodeAggAsOf(v); err != nil {
			return err
		}
		if len(v) == 16 {
			rb.asOf = bucketsAsOf
		}
	}
	return nil
}

// stillOpen reports whether t is still an open span of its window (or its bucket the newest),
// of a board the store still has (a board deleted, or deleted and made again, is another
// board).
func (s *Store) stillOpen(t dirtyTarget) bool {
	if s.boards[t.b.cfg.ID] != t.b {
		return false
	}
	for _, w := range t.b.windows {
		if w == t.w {
			if t.bk != nil {
				return w.newest == t.bk
			}
			return w.span(t.sp.start) == t.sp
		}
	}
	return false
}

// frozenSince reports whether the period of w starting at start has closed: it is no later
// than the newest closed period (one of its events' closes it with data, so it has one), or
// than what a change of the board closed.
func frozenSince(w *window, start int64) bool {
	if len(w.closed) > 0 && start <= w.closed[0].start {
		return true
	}
	return w.marks.ClosedThrough != noTime && start <= w.marks.ClosedThrough
}

// replay adds to the open periods, all and the rolling windows' buckets what the stored
// aggregates do not count yet: the events since the last seal from the number replay starts
// from (see the top of this file). asOf holds the last sequence number counted by each stored
// aggregate of an open period or all whose number is that high; a bucket says its own, and
// one stored without a number counts every event through bucketsAsOf. An event added to a
// bucket that a rolling window's current span holds is added to that span too, as a submit
// adds it (the span was built at open from the buckets as stored). It then stores every
// aggregate it changed, and that replay starts after them, in one commit.
//
// When the store held aggregates of open periods or all (legacy), it writes the checkpoint
// file whole instead.
func (s *Store) replay(from uint64, asOf map[string]uint64, bucketsAsOf uint64, legacy bool) (int, error) {
	type touched struct {
		b  *board
		w  *window
		sp *span
		h  uint32
	}
	changed := make(map[touched]bool)
	buckets := make(map[string]*replayedBucket) // by key
	added := 0                                  // buckets that count an event more
	replayed := 0
	// addToSpan adds ev to its member's aggregate in sp, an in-memory span.
	addToSpan := func(b *board, sp *span, ev event) error {
		_, v, ok := slotOf(b, &sp.slots, ev.member)
		next, err := laurel.Add(b.cfg.Mode, b.cfg.Ordering(), toAgg(aggregate(v), ok), ev.value, ev.sub, ev.ts, ev.seq)
		if err != nil {
			return err
		}
		b.set(s, sp, ev.member, slot(fromAgg(next)), true)
		return nil
	}
	addToBucket := func(b *board, w *window, bs, be int64, ev event) error {
		k := aggKey(b.cfg.ID, w.name, bs, ev.member)
		rb := buckets[string(k)] // read before (readBuckets)
		if rb.asOf >= ev.seq {
			return nil
		}
		next, err := laurel.Add(b.cfg.Mode, b.cfg.Ordering(), toAgg(rb.a, rb.present), ev.value, ev.sub, ev.ts, ev.seq)
		if err != nil {
			return err
		}
		if !rb.added {
			added++
		}
		rb.a, rb.present, rb.asOf, rb.added = fromAgg(next), true, ev.seq, true
		if cur := w.open[0]; cur.Bounds().Holds(bs, be) {
			return addToSpan(b, cur, ev)
		}
		return nil
	}
	add := func(board string, ev event) error {
		b := s.boards[board]
		if b == nil {
			return nil
		}
		replayed++
		cal := b.cfg.Calendar()
		for _, w := range b.windows {
			start, end := cal.SpanOf(w.w, ev.ts)
			if w.w.IsRolling() {
				if err := addToBucket(b, w, start, end, ev); err != nil {
					return err
				}
				continue
			}
			if w.w.IsCalendar() && frozenSince(w, start) {
				continue // frozen since, counting it
			}
			if asOf[string(aggKey(b.cfg.ID, w.name, start, ev.member))] >= ev.seq {
				continue
			}
			sp := b.spanFor(w, start, end, true)
			if err := addToSpan(b, sp, ev); err != nil {
				return err
			}
			h, _ := b.members.lookup(ev.member)
			changed[touched{b, w, sp, h}] = true
		}
		return nil
	}
	events, err := s.replayedEvents(from)
	if err != nil {
		return 0, err
	}
	if err := s.readBuckets(events, buckets, bucketsAsOf); err != nil {
		return 0, err
	}
	for _, be := range events {
		if err := add(be.board, be.event); err != nil {
			return 0, err
		}
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	if bucketsAsOf == math.MaxUint64 {
		// The first open since buckets were written behind: every bucket stored without a
		// number counts every event so far.
		if err := batch.Set([]byte{tagBucketsAsOf}, appendU64(nil, s.seq), nil); err != nil {
			return 0, err
		}
	}
	if len(changed) == 0 && added == 0 && batch.Empty() && !legacy {
		return replayed, nil
	}
	var recs []byte
	if legacy {
		// Memory now counts every event: the checkpoint file is written whole from it, and
		// the store's aggregates of open periods and all, which it holds since, go. The
		// buckets it copies from the store are as they were before this batch, which
		// changes them: its records of them follow.
		if err := s.rewriteCheckpoints(); err != nil {
			return 0, err
		}
		for _, b := range s.boards {
			for _, w := range b.windows {
				if p := prefix(tagAgg, b.cfg.ID, w.name); !w.w.IsRolling() {
					if err := batch.DeleteRange(p, upper(p), nil); err != nil {
						return 0, err
					}
					s.moved = append(s.moved, [2][]byte{p, upper(p)})
				}
			}
		}
	} else {
		for t := range changed {
			v, _ := t.sp.slots.get(t.h)
			recs = appendCPAgg(recs, t.b.cfg.ID, t.w.name, t.sp.start, t.b.members.name(t.h), aggregate(v), true, s.seq)
		}
	}
	for k, rb := range buckets {
		if rb.added {
			if err := batch.Set([]byte(k), encodeAggAsOf(rb.a, s.seq), nil); err != nil {
				return 0, err
			}
			recs = appendCPKeyed(recs, []byte(k), rb.a, true, s.seq) // the file's copy (cpsection.go)
		}
	}
	if len(recs) > 0 {
		if err := s.appendCheckpoints(recs, batch); err != nil {
			return 0, err
		}
	}
	if err := batch.Set([]byte{tagReplay}, appendU64(nil, s.seq+1), nil); err != nil {
		return 0, err
	}
	s.cp.replayFrom = s.seq + 1
	if err := batch.Commit(pebble.Sync); err != nil {
		return 0, err
	}
	return replayed, nil
}
