package embedded

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// Checkpointed aggregates.
//
// Open calendar periods and all are whole in memory (each span's slots), so a submit does not
// write their aggregates to Pebble: it writes its events (with ids, history points and rolling
// buckets) and one log record for its group, listing them. The writer writes an aggregate a
// submit changed later, once for all the events that change it meanwhile: when it has been
// dirty for CheckpointLag events. It stores with the aggregate the last sequence number the
// aggregate counts, and stores the first sequence number that replay must start from (below
// it, every event is counted in every stored aggregate). Every other change of an aggregate (a
// retraction, a deletion, a window built) is written at once, with its number too.
//
// Open recovers the stored aggregates and then replays the log from that number: each event
// still stored and not retracted is added, in sequence, to the open periods and all that do
// not count it yet. That is at most CheckpointLag events and the rest of their groups.

// dirtyEntry is an aggregate in memory that the store does not hold yet.
type dirtyEntry struct {
	b   *board
	w   *window
	sp  *span
	h   uint32
	seq uint64 // the first sequence number of the group that changed it first
}

// checkpoints is the writer's account of what the store does not hold yet.
type checkpoints struct {
	queue      []dirtyEntry // oldest first
	logs       []loggedGroup
	replayFrom uint64 // as stored
}

// loggedGroup is a log record still stored: a group's first and last sequence numbers.
type loggedGroup struct{ first, last uint64 }

func logKey(first uint64) []byte { return appendU64([]byte{tagLog}, first) }

// markDirty notes that the aggregate of handle h in sp changed in a group whose first
// sequence number is seq and is not stored yet. The writer calls it, under the write lock.
func (e *Store) markDirty(b *board, w *window, sp *span, h uint32, seq uint64) {
	if sp.dirty.has(h) {
		return
	}
	sp.dirty.add(h)
	e.cp.queue = append(e.cp.queue, dirtyEntry{b, w, sp, h, seq})
}

// checkpoint stages, first in a new group's batch, the aggregates dirty for at least
// CheckpointLag events (all of them when all is set), as memory holds them; then the number
// replay starts from, and the deletion of the log records wholly below it. Memory counts
// every event up to e.seq: the group's own changes come later in the batch, and win.
func (e *Store) checkpoint(tx *txn, all bool) {
	n := 0
	for _, d := range e.cp.queue {
		if !all && d.seq+uint64(e.opts.CheckpointLag) > e.seq {
			break
		}
		n++
		d.sp.dirty.remove(d.h)
		if !e.stillOpen(d) {
			continue // its period closed, or its window or board went: nothing to store
		}
		k := aggKey(d.b.cfg.ID, d.w.name, d.sp.start, d.b.members.name(d.h))
		if v, ok := d.sp.slots.get(d.h); ok {
			tx.set(k, encodeAggAsOf(aggregate(v), e.seq))
		} else {
			tx.del(k)
		}
	}
	e.cp.queue = e.cp.queue[n:]
	from := e.seq + 1
	if len(e.cp.queue) > 0 {
		from = e.cp.queue[0].seq
	}
	if from == e.cp.replayFrom || len(e.cp.logs) == 0 {
		return // nothing new to drop; with no log, where replay starts does not matter
	}
	tx.set([]byte{tagReplay}, appendU64(nil, from))
	m := 0
	for _, g := range e.cp.logs {
		if g.last >= from {
			break
		}
		tx.del(logKey(g.first))
		m++
	}
	logs := e.cp.logs[m:]
	tx.onCommit(nil, func() { e.cp.replayFrom, e.cp.logs = from, logs })
}

// stillOpen reports whether d's span is still an open span of its window, of a board the store
// still has (a board deleted, or deleted and made again, is another board).
func (e *Store) stillOpen(d dirtyEntry) bool {
	if e.boards[d.b.cfg.ID] != d.b {
		return false
	}
	for _, w := range d.b.windows {
		if w == d.w {
			return w.span(d.sp.start) == d.sp
		}
	}
	return false
}

// newestLog returns the key of the newest log record, or nil.
func (e *Store) newestLog() []byte {
	if len(e.cp.logs) == 0 {
		return nil
	}
	return logKey(e.cp.logs[len(e.cp.logs)-1].first)
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

// loggedEvent is an applied event of a group, in its log record.
type loggedEvent struct {
	board, member string
	seq           uint64
	ts            int64
}

// encodeLog encodes a group's log record: its time and applied events.
func encodeLog(now int64, entries []loggedEvent) []byte {
	b := appendU64(nil, uint64(now))
	for _, j := range entries {
		b = append(b, j.board...)
		b = append(b, 0)
		b = append(b, j.member...)
		b = append(b, 0)
		b = appendU64(b, j.seq)
		b = appendU64(b, uint64(j.ts))
	}
	return b
}

func decodeLog(b []byte) (now int64, entries []loggedEvent, err error) {
	if len(b) < 8 {
		return 0, nil, errCorrupt
	}
	now = int64(readU64(b))
	for b = b[8:]; len(b) > 0; {
		var j loggedEvent
		for _, part := range []*string{&j.board, &j.member} {
			i := bytes.IndexByte(b, 0)
			if i < 0 {
				return 0, nil, errCorrupt
			}
			*part, b = string(b[:i]), b[i+1:]
		}
		if len(b) < 16 {
			return 0, nil, errCorrupt
		}
		j.seq, j.ts, b = readU64(b), int64(readU64(b[8:])), b[16:]
		entries = append(entries, j)
	}
	return now, entries, nil
}

// stageLog stores the events a group applied, for replay; the writer notes the record once
// it is committed.
func (e *Store) stageLog(tx *txn) *loggedGroup {
	if len(tx.logged) == 0 {
		return nil
	}
	g := &loggedGroup{first: tx.logged[0].seq, last: tx.logged[len(tx.logged)-1].seq}
	tx.set(logKey(g.first), encodeLog(tx.now, tx.logged))
	return g
}

// replay adds to the open periods and all what the stored aggregates do not count yet: the
// logged events from the number replay starts from (see the top of this file). asOf holds
// the last sequence number counted by each stored aggregate whose number is that high. It
// then stores every aggregate it changed, and that replay starts after them, in one commit.
// The log stays (its newest record names the events whose history points may be missing,
// history.go) until the first checkpoint drops it.
func (e *Store) replay(from uint64, asOf map[string]uint64) (int, error) {
	type touched struct {
		b  *board
		w  *window
		sp *span
		h  uint32
	}
	changed := make(map[touched]bool)
	replayed := 0
	err := scanPrefix(e.db, []byte{tagLog}, func(k, v []byte) error {
		_, entries, err := decodeLog(v)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			e.cp.logs = append(e.cp.logs, loggedGroup{readU64(k[1:]), entries[len(entries)-1].seq})
		}
		for _, j := range entries {
			if j.seq < from {
				continue
			}
			b := e.boards[j.board]
			if b == nil {
				continue // deleted since
			}
			ev := event{member: j.member, seq: j.seq}
			stored, ok, err := get(e.db, eventKey(j.board, j.member, j.seq))
			if err != nil {
				return err
			}
			if !ok {
				continue // the member was deleted since
			}
			if err := decodeEventValue(&ev, stored); err != nil {
				return err
			}
			if ev.flags&flagRetracted != 0 {
				continue
			}
			replayed++
			cal := b.cfg.Calendar()
			for _, w := range b.windows {
				if w.w.IsRolling() {
					continue // its buckets are stored by every write
				}
				start, end, _ := cal.SpanOf(w.w, ev.ts)
				if w.w.IsCalendar() && frozenSince(w, start) {
					continue // frozen since, counting it
				}
				if asOf[string(aggKey(b.cfg.ID, w.name, start, ev.member))] >= ev.seq {
					continue
				}
				sp := b.spanFor(w, start, end, true)
				_, v, ok := slotOf(b, &sp.slots, ev.member)
				next, err := laurel.Add(b.cfg.Mode, b.cfg.Order, toAgg(aggregate(v), ok), ev.value, ev.ts, ev.seq)
				if err != nil {
					return err
				}
				b.set(e, sp, ev.member, slot(fromAgg(next)), true)
				h, _ := b.members.lookup(ev.member)
				changed[touched{b, w, sp, h}] = true
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(changed) == 0 {
		return replayed, nil
	}
	batch := e.db.NewBatch()
	defer batch.Close()
	for t := range changed {
		v, _ := t.sp.slots.get(t.h)
		if err := batch.Set(aggKey(t.b.cfg.ID, t.w.name, t.sp.start, t.b.members.name(t.h)), encodeAggAsOf(aggregate(v), e.seq), nil); err != nil {
			return 0, err
		}
	}
	if err := batch.Set([]byte{tagReplay}, appendU64(nil, e.seq+1), nil); err != nil {
		return 0, err
	}
	e.cp.replayFrom = e.seq + 1
	return replayed, batch.Commit(pebble.Sync)
}
