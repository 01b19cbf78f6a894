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

// The log's records.

func logKey(first uint64) []byte    { return appendU64([]byte{tagLog}, first) }
func pointsKey(first uint64) []byte { return appendU64([]byte{tagPoints}, first) }

// loggedEvent is an applied event of a group, in its log record.
type loggedEvent struct {
	board string
	event
}

// encodeLog encodes a group's log record: its time and applied events, each with its seq.
func encodeLog(now int64, entries []loggedEvent) []byte {
	b := appendU64(make([]byte, 0, 8+len(entries)*48), uint64(now))
	for i := range entries {
		b = binary.AppendUvarint(b, entries[i].seq)
		b = appendEvent(b, entries[i].board, &entries[i].event)
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
		var n int
		if j.seq, n = binary.Uvarint(b); n <= 0 {
			return 0, nil, errCorrupt
		}
		if j.board, b, err = readEvent(b[n:], &j.event); err != nil {
			return 0, nil, err
		}
		entries = append(entries, j)
	}
	return now, entries, nil
}

// pointRecord is an event's history point on its way to the log.
type pointRecord struct {
	seq   uint64
	point []byte
}

func encodePoints(points []pointRecord) []byte {
	var b []byte
	for _, p := range points {
		b = binary.AppendUvarint(b, p.seq)
		b = append(binary.AppendUvarint(b, uint64(len(p.point))), p.point...)
	}
	return b
}

func decodePointsRecord(b []byte) ([]pointRecord, error) {
	var out []pointRecord
	for len(b) > 0 {
		seq, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errCorrupt
		}
		l, m := binary.Uvarint(b[n:])
		if m <= 0 || uint64(len(b)-n-m) < l {
			return nil, errCorrupt
		}
		b = b[n+m:]
		out = append(out, pointRecord{seq, b[:l:l]})
		b = b[l:]
	}
	return out, nil
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

// recoverRecent rebuilds the events since the last seal from the log: the groups committed
// to the store (up to its sequence record: a later one was never answered, the crash came
// between the two commits) and not sealed yet (a seal that the crash cut short before the log
// was emptied left them). It drops the others from the log, and marks the retracted.
func (e *Store) recoverRecent() error {
	sealed, err := e.sealedThrough()
	if err != nil {
		return err
	}
	stale := e.logDB.NewBatch()
	defer stale.Close()
	err = scanPrefix(e.logDB, []byte{tagLog}, func(k, v []byte) error {
		_, entries, err := decodeLog(v)
		if err != nil {
			return err
		}
		if len(entries) == 0 || entries[0].seq <= sealed || entries[0].seq > e.seq {
			return stale.Delete(k, nil)
		}
		for _, j := range entries {
			e.recent.add(j.board, j.event)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = scanPrefix(e.logDB, []byte{tagPoints}, func(k, v []byte) error {
		points, err := decodePointsRecord(v)
		if err != nil {
			return err
		}
		if len(points) == 0 || points[len(points)-1].seq <= sealed {
			return stale.Delete(k, nil)
		}
		for _, p := range points {
			e.recent.setPoint(p.seq, append([]byte(nil), p.point...))
		}
		return nil
	})
	if err != nil {
		return err
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
	if err := e.db.DeleteRange(sealedKey(sealed+1, ""), []byte{tagSealed + 1}, pebble.Sync); err != nil {
		return err
	}
	if stale.Empty() {
		return nil
	}
	return stale.Commit(pebble.Sync)
}

// sealedThrough is the last sequence number sealed, as stored.
func (e *Store) sealedThrough() (uint64, error) {
	v, ok, err := get(e.db, []byte{tagSealedTo})
	if err != nil || !ok {
		return 0, err
	}
	return readU64(v), nil
}
