package embedded

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Where events live.
//
// An event is written twice, and never by its key among others': first, in its group's
// record of the log, the durable record the group's answer waits for (the log is a Pebble
// store of its own, in log/, whose few large keys never leave its memtable); then, once the
// log holds SealEvents of them, all at once, sealed: the writer builds one sorted file of
// them keyed by sequence number, each with its history point, and hands it to the store
// whole (Pebble's ingestion: the file becomes a table of the last level, which no compaction
// rewrites, since nothing else is keyed there), with the member index (N) and the ids (I) of
// those events, then empties the log. So the store's cost of an event is a share of one
// append and of one sequential file, instead of four records with random keys that
// compactions rewrote level after level (docs/decisions.md, "Where events live").
//
// Memory indexes the events since the last seal (recent): by id, for the id check, and by
// member, for retractions and history; the log is read only by Open, which rebuilds them.

// recentEvent is an event since the last seal.
type recentEvent struct {
	board string
	event
	point []byte // its history point (encodeHistory), once stored
}

// recentEvents indexes the events since the last seal, in sequence order. The writer changes
// it, holding the store's write lock; readers read it holding the read lock.
type recentEvents struct {
	list    []recentEvent
	ids     map[string]int32   // board 0 id → index in list, for counted events with ids
	members map[string][]int32 // board 0 member → indexes in list
}

func newRecentEvents() *recentEvents {
	return &recentEvents{ids: make(map[string]int32), members: make(map[string][]int32)}
}

func pairKey(board, s string) string { return board + "\x00" + s }

// add appends an event (its seq greater than every one before).
func (r *recentEvents) add(board string, ev event) {
	i := int32(len(r.list))
	r.list = append(r.list, recentEvent{board: board, event: ev})
	if ev.id != "" && ev.flags&flagRetracted == 0 {
		r.ids[pairKey(board, ev.id)] = i
	}
	k := pairKey(board, ev.member)
	r.members[k] = append(r.members[k], i)
}

// clone returns a copy that later changes to r do not reach (points are never changed once
// set, so they are shared).
func (r *recentEvents) clone() *recentEvents {
	c := newRecentEvents()
	for _, re := range r.list {
		c.add(re.board, re.event)
		c.list[len(c.list)-1].point = re.point
	}
	return c
}

// bySeq returns the event seq, or nil.
func (r *recentEvents) bySeq(seq uint64) *recentEvent {
	i, ok := slices.BinarySearchFunc(r.list, seq, func(x recentEvent, s uint64) int { return cmp.Compare(x.seq, s) })
	if !ok {
		return nil
	}
	return &r.list[i]
}

// byID returns the counted event of board with id, or nil (r may be nil).
func (r *recentEvents) byID(board, id string) *recentEvent {
	if r == nil {
		return nil
	}
	if i, ok := r.ids[pairKey(board, id)]; ok {
		return &r.list[i]
	}
	return nil
}

// member returns the member's events on board, oldest first (r may be nil).
func (r *recentEvents) member(board, member string) []*recentEvent {
	if r == nil {
		return nil
	}
	idx := r.members[pairKey(board, member)]
	out := make([]*recentEvent, len(idx))
	for i, j := range idx {
		out[i] = &r.list[j]
	}
	return out
}

// retract marks the event seq retracted: its id is free again.
func (r *recentEvents) retract(seq uint64) {
	re := r.bySeq(seq)
	if re == nil {
		return
	}
	re.flags |= flagRetracted
	if re.id != "" {
		if i, ok := r.ids[pairKey(re.board, re.id)]; ok && r.list[i].seq == seq {
			delete(r.ids, pairKey(re.board, re.id))
		}
	}
}

// setPoint attaches a stored history point to its event, unless the event is gone.
func (r *recentEvents) setPoint(seq uint64, point []byte) {
	if re := r.bySeq(seq); re != nil {
		re.point = point
	}
}

// The log's records. A commit that logs anything writes one record, keyed by its number: the
// group's time, its applied events each with its seq, history points of earlier events, and
// the store's batch of the commit, whole (its repr). That record, synced, is the commit's one
// durable write: the store applies the batch after it without a sync, with the record's
// number (tagApplied), and Open applies again the batches of the records the store lost.
// Commits that log nothing (board changes, retractions, closings, seals) sync the store
// itself, which also makes every batch before them durable, in order.

func logKey(n uint64) []byte { return appendU64([]byte{tagLog}, n) }

// loggedEvent is an applied event of a group, in its log record.
type loggedEvent struct {
	board string
	event
}

// pointRecord is an event's history point on its way to the log.
type pointRecord struct {
	seq   uint64
	point []byte
}

// logRecord is a decoded log record.
type logRecord struct {
	n      uint64
	now    int64
	events []loggedEvent
	points []pointRecord
	batch  []byte // the store's batch (a Pebble batch repr), or nil
}

func encodeLogRecord(now int64, events []loggedEvent, points []pointRecord, batch []byte) []byte {
	b := appendU64(make([]byte, 0, 16+len(events)*48+len(points)*40+len(batch)), uint64(now))
	b = binary.AppendUvarint(b, uint64(len(events)))
	for i := range events {
		b = binary.AppendUvarint(b, events[i].seq)
		b = appendEvent(b, events[i].board, &events[i].event)
	}
	b = binary.AppendUvarint(b, uint64(len(points)))
	for _, p := range points {
		b = binary.AppendUvarint(b, p.seq)
		b = appendString(b, string(p.point))
	}
	return append(b, batch...)
}

func decodeLogRecord(n uint64, b []byte) (r logRecord, err error) {
	r.n = n
	if len(b) < 8 {
		return r, errCorrupt
	}
	r.now, b = int64(readU64(b)), b[8:]
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return r, errCorrupt
	}
	b = b[k:]
	for range count {
		var j loggedEvent
		if j.seq, k = binary.Uvarint(b); k <= 0 {
			return r, errCorrupt
		}
		if j.board, b, err = readEvent(b[k:], &j.event); err != nil {
			return r, err
		}
		r.events = append(r.events, j)
	}
	if count, k = binary.Uvarint(b); k <= 0 {
		return r, errCorrupt
	}
	b = b[k:]
	for range count {
		var p pointRecord
		if p.seq, k = binary.Uvarint(b); k <= 0 {
			return r, errCorrupt
		}
		var point string
		var ok bool
		if point, b, ok = readString(b[k:]); !ok {
			return r, errCorrupt
		}
		p.point = []byte(point)
		r.points = append(r.points, p)
	}
	if len(b) > 0 {
		r.batch = b
	}
	return r, nil
}

// sealedBy reports whether a seal through sealed took the record's events (and the points it
// holds, which are of events before its own).
func (r *logRecord) sealedBy(sealed uint64) bool {
	switch {
	case len(r.events) > 0:
		return r.events[0].seq <= sealed
	case len(r.points) > 0:
		return r.points[len(r.points)-1].seq <= sealed
	}
	return true
}

// openLog opens the log of the store in dir. Its memtable holds more than the records of a
// seal, which the seal deletes while they are there: they never reach a file but the log's own.
func openLog(dir string, opts Options) (*pebble.DB, error) {
	o := opts
	o.MemTableSize = opts.LogMemTableSize
	o.CacheSize = 1 << 20
	db, _, err := openStore(opts.FS.PathJoin(dir, "log"), o)
	return db, err
}

// readLog reads the log, first thing in Open: it applies to the store again the batches of
// the records the store lost in a crash (those after the last it applied), drops the records
// a seal took (a seal cut short before the log was emptied), and returns the others.
func (e *Store) readLog() ([]logRecord, error) {
	sealed, err := e.sealedThrough()
	if err != nil {
		return nil, err
	}
	var applied uint64
	if v, ok, err := get(e.db, []byte{tagApplied}); err != nil {
		return nil, err
	} else if ok {
		applied = readU64(v)
	}
	e.logNo = applied
	stale := e.logDB.NewBatch()
	defer stale.Close()
	var records []logRecord
	reapplied := 0
	err = scanPrefix(e.logDB, []byte{tagLog}, func(k, v []byte) error {
		r, err := decodeLogRecord(readU64(k[1:]), append([]byte(nil), v...))
		if err != nil {
			return err
		}
		e.logNo = max(e.logNo, r.n)
		if r.n > applied && r.batch != nil {
			b := e.db.NewBatch()
			defer b.Close()
			if err := b.SetRepr(r.batch); err != nil {
				return err
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			reapplied++
		}
		if r.sealedBy(sealed) {
			return stale.Delete(k, nil)
		}
		records = append(records, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reapplied > 0 {
		if err := e.db.LogData(nil, pebble.Sync); err != nil {
			return nil, err
		}
		e.log.Info("applied the log's last commits again", "commits", reapplied)
	}
	if !stale.Empty() {
		if err := stale.Commit(pebble.Sync); err != nil {
			return nil, err
		}
	}
	return records, nil
}

// recoverRecent rebuilds the events since the last seal from the log's records, and marks the
// retracted ones.
func (e *Store) recoverRecent(records []logRecord) error {
	sealed, err := e.sealedThrough()
	if err != nil {
		return err
	}
	for _, r := range records {
		for _, j := range r.events {
			e.recent.add(j.board, j.event)
		}
		for _, p := range r.points {
			e.recent.setPoint(p.seq, p.point)
		}
	}
	for i := range e.recent.list {
		re := &e.recent.list[i]
		if _, ok, err := get(e.db, retractKey(re.board, re.seq)); err != nil {
			return err
		} else if ok {
			e.recent.retract(re.seq)
		}
	}
	// A seal cut short may have handed the store events it never indexed: they are copies
	// of events still in the log, or of events a deletion erased since; drop them.
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: sealedKey(sealed+1, ""), UpperBound: []byte{tagSealed + 1}})
	if err != nil {
		return err
	}
	strays := it.First()
	if err := it.Close(); err != nil || !strays {
		return err
	}
	return e.db.DeleteRange(sealedKey(sealed+1, ""), []byte{tagSealed + 1}, pebble.Sync)
}

// sealedThrough is the last sequence number sealed, as stored.
func (e *Store) sealedThrough() (uint64, error) {
	v, ok, err := get(e.db, []byte{tagSealedTo})
	if err != nil || !ok {
		return 0, err
	}
	return readU64(v), nil
}
