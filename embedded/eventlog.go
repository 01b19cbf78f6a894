package embedded

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Where events live.
//
// An event is written twice, and never by a key of its own among others': first in its
// group's record of the log, the one durable write the group's answer waits for (the log is
// a Pebble store of its own, in log/, whose few large keys rarely leave its memtable); then,
// once the log holds SealEvents of them, all at once, sealed (seal.go): one sorted file of
// them keyed by sequence number, each with its history point, handed to the store whole
// (Pebble's ingestion: the file becomes a table of the last level, which no compaction
// rewrites, since nothing else is keyed there), with the member index (N) and the ids (I) of
// those events; then the log's records go. So the store's cost of an event is a share of one
// record and of one sequential file, instead of four records with random keys that
// compactions rewrote level after level (docs/decisions.md, "Where events live").
//
// Memory indexes the events since the last seal (recentEvents): by id, for the id check, and
// by member, for retractions and history. Their history points stay in the log, read back by
// History, exports and seals; Open rebuilds the index from the log.

// recentEvent is what memory keeps of an event since the last seal: its seq, the event
// encoded in an arena (appendEvent), hashes of its id and member for the lookups, and where
// its history point is in the log: about 90 bytes an event, where the strings, maps and
// points of the events themselves took some 300.
type recentEvent struct {
	seq   uint64
	point uint64 // the number of the log record holding its history point; 0: none yet
	idh   uint64 // hash of board and id; 0 without an id
	mh    uint64 // hash of board and member
	off   uint32 // where the event begins in the arena
	flags uint8  // flagRetracted once retracted (the arena keeps the event as it came)
}

// recentEvents indexes the events since the last seal, in sequence order: by id, for the id
// check, and by member, for retractions and history. A Bloom filter of the ids answers for
// a new id; the rest is a scan of the hashes (some 50 µs at 65536 events), for the few ids
// seen before and for a member's history. The writer changes it, holding the store's write
// lock; readers read it holding the read lock.
type recentEvents struct {
	// tagged are the boards that carried tags when the events were frozen for a seal, which
	// indexes theirs by time (tags.go); nil until then.
	tagged map[string]bool
	list   []recentEvent
	arena  []byte // the events, encoded back to back; only ever appended to
	ids    *blockedBloom
	seed   maphash.Seed
}

// newRecentEvents makes the index for a seal's capacity of events, its list and arena made
// that large at once: grown step by step, they would be the largest part of the bytes the
// writer allocates (docs/benchmarks-log.md, "Fewer allocations an event").
func newRecentEvents(capacity int) *recentEvents {
	return &recentEvents{ids: newBlockedBloom(max(capacity, 1024)), seed: maphash.MakeSeed(),
		list: make([]recentEvent, 0, capacity), arena: make([]byte, 0, capacity*recentEventBytes)}
}

// recentEventBytes is about what an event takes in the arena with short names and an id.
const recentEventBytes = 64

func (r *recentEvents) hash(board, s string) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(board)
	h.WriteByte(0)
	h.WriteString(s)
	return h.Sum64() | 1 // never 0, which means no id
}

func pairKey(board, s string) string { return board + "\x00" + s }

// add appends an event (its seq greater than every one before).
func (r *recentEvents) add(board string, ev event) {
	re := recentEvent{seq: ev.seq, off: uint32(len(r.arena)), mh: r.hash(board, ev.member)}
	if ev.id != "" {
		re.idh = r.hash(board, ev.id)
		r.ids.add(re.idh)
	}
	r.arena = appendEvent(r.arena, board, &ev)
	r.list = append(r.list, re)
}

// at decodes event i, flagged retracted when it was since.
func (r *recentEvents) at(i int32) (board string, ev event) { return r.decode(i, false) }

// view is at with strings that share the arena, which is never written over: for a caller
// that keeps none of them (decodeEvent).
func (r *recentEvents) view(i int32) (board string, ev event) { return r.decode(i, true) }

func (r *recentEvents) decode(i int32, view bool) (board string, ev event) {
	re := &r.list[i]
	board, _, err := decodeEvent(r.arena[re.off:], &ev, view)
	if err != nil {
		panic("embedded: decoding an event encoded in memory: " + err.Error())
	}
	ev.seq = re.seq
	ev.flags |= re.flags
	return board, ev
}

// clone returns a copy for a reader that later changes do not reach (the arena and the filter
// are shared: they are only ever added to).
func (r *recentEvents) clone() *recentEvents {
	c := *r
	c.list = slices.Clone(r.list)
	return &c
}

// index returns the index of the event seq.
func (r *recentEvents) index(seq uint64) (int32, bool) {
	i, ok := slices.BinarySearchFunc(r.list, seq, func(x recentEvent, s uint64) int { return cmp.Compare(x.seq, s) })
	return int32(i), ok
}

// byID returns the counted event of board with id (r may be nil).
func (r *recentEvents) byID(board, id string) (event, bool) {
	if r == nil {
		return event{}, false
	}
	h := r.hash(board, id)
	if !r.ids.has(h) {
		return event{}, false
	}
	for i := len(r.list) - 1; i >= 0; i-- {
		if r.list[i].idh != h || r.list[i].flags&flagRetracted != 0 {
			continue
		}
		if b, ev := r.at(int32(i)); b == board && ev.id == id {
			return ev, true
		}
	}
	return event{}, false
}

// member returns the indexes of the member's events on board, oldest first (r may be nil).
func (r *recentEvents) member(board, member string) []int32 {
	if r == nil {
		return nil
	}
	var out []int32
	h := r.hash(board, member)
	for i := range r.list {
		if r.list[i].mh != h {
			continue
		}
		if b, ev := r.at(int32(i)); b == board && ev.member == member {
			out = append(out, int32(i))
		}
	}
	return out
}

// retract marks the event seq retracted: its id is free again.
func (r *recentEvents) retract(seq uint64) {
	if i, ok := r.index(seq); ok {
		r.list[i].flags |= flagRetracted
	}
}

// setPoint notes that log record n holds the event seq's history point.
func (r *recentEvents) setPoint(seq, n uint64) {
	if i, ok := r.index(seq); ok {
		r.list[i].point = n
	}
}

// logPoints reads events' history points from the log, each record decoded once.
type logPoints struct {
	r       pebble.Reader
	records map[uint64]map[uint64][]byte
}

func newLogPoints(r pebble.Reader) *logPoints {
	return &logPoints{r: r, records: make(map[uint64]map[uint64][]byte)}
}

// point returns the event seq's point, held by record n; nil when n is 0 or does not hold it.
func (lp *logPoints) point(n, seq uint64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	points, ok := lp.records[n]
	if !ok {
		v, found, err := get(lp.r, logKey(n))
		if err != nil {
			return nil, err
		}
		points = make(map[uint64][]byte)
		if found {
			rec, err := decodeLogRecord(n, v)
			if err != nil {
				return nil, err
			}
			for _, p := range rec.points {
				points[p.seq] = p.point
			}
		}
		lp.records[n] = points
	}
	return points[seq], nil
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

// appendLogRecord appends to b the log record of a commit.
func appendLogRecord(b []byte, now int64, events []loggedEvent, points []pointRecord, batch []byte) []byte {
	b = slices.Grow(b, 16+len(events)*48+len(points)*40+len(batch))
	b = appendU64(b, uint64(now))
	b = binary.AppendUvarint(b, uint64(len(events)))
	for i := range events {
		b = binary.AppendUvarint(b, events[i].seq)
		b = appendEvent(b, events[i].board, &events[i].event)
	}
	b = binary.AppendUvarint(b, uint64(len(points)))
	for _, p := range points {
		b = binary.AppendUvarint(b, p.seq)
		b = appendString(b, p.point)
	}
	return append(b, batch...)
}

func decodeLogRecord(n uint64, b []byte) (r logRecord, err error) {
	r.n = n
	r.now, r.batch, err = walkLogRecord(b, func(seq uint64, b []byte) ([]byte, error) {
		j := loggedEvent{event: event{seq: seq}}
		var err error
		j.board, b, err = readEvent(b, &j.event)
		r.events = append(r.events, j)
		return b, err
	}, func(seq uint64, point []byte) {
		r.points = append(r.points, pointRecord{seq, append([]byte{}, point...)})
	})
	return r, err
}

// eachLogPoint calls fn with each history point of a log record, without decoding its
// events: point is valid only during the call.
func eachLogPoint(b []byte, fn func(seq uint64, point []byte)) error {
	_, _, err := walkLogRecord(b, func(_ uint64, b []byte) ([]byte, error) {
		if rest, ok := skipEvent(b); ok {
			return rest, nil
		}
		return nil, errCorrupt
	}, fn)
	return err
}

// walkLogRecord reads a log record (appendLogRecord): it gives each event's encoding to
// event, which returns what follows it, and each history point to point (valid only during
// the call), and returns the record's time and the store's batch that ends it (nil: none).
func walkLogRecord(b []byte, event func(seq uint64, b []byte) ([]byte, error), point func(seq uint64, p []byte)) (now int64, batch []byte, err error) {
	if len(b) < 8 {
		return 0, nil, errCorrupt
	}
	now, b = int64(readU64(b)), b[8:]
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, errCorrupt
	}
	b = b[k:]
	for range count {
		seq, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, nil, errCorrupt
		}
		if b, err = event(seq, b[k:]); err != nil {
			return 0, nil, err
		}
	}
	if count, k = binary.Uvarint(b); k <= 0 {
		return 0, nil, errCorrupt
	}
	b = b[k:]
	for range count {
		seq, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, nil, errCorrupt
		}
		p, rest, ok := readBytes(b[k:])
		if !ok {
			return 0, nil, errCorrupt
		}
		point(seq, p)
		b = rest
	}
	if len(b) > 0 {
		batch = b
	}
	return now, batch, nil
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

// openLog opens the log of the store in dir. Every record reaches a table once, whether a
// seal has deleted it by then or not: Pebble's flushes keep what a later tombstone in the
// same memtable covers, and only compactions drop it.
func openLog(dir string, opts Options) (*pebble.DB, error) {
	o := opts
	o.MemTableSize = opts.LogMemTableSize
	o.Existing = false // a store of an earlier version has none yet
	o.CacheSize = 1 << 20
	o.Logger = opts.Logger.With("db", "log") // Pebble's messages of the log, told from the store's
	db, _, err := openStore(opts.FS.PathJoin(dir, "log"), o, logOpenFiles)
	return db, err
}

// readLog reads the log, first thing in Open: it applies to the store again the batches of
// the records the store lost in a crash (those after the last it applied), drops the records
// a seal took (a seal cut short before the log was emptied), and returns the others.
func (s *Store) readLog() ([]logRecord, error) {
	sealed, err := s.sealedThrough()
	if err != nil {
		return nil, err
	}
	var applied uint64
	if v, ok, err := get(s.db, []byte{tagApplied}); err != nil {
		return nil, err
	} else if ok {
		applied = readU64(v)
	}
	s.logNo = applied
	stale := s.logDB.NewBatch()
	defer stale.Close()
	var records []logRecord
	reapplied := 0
	err = scanPrefix(s.logDB, []byte{tagLog}, func(k, v []byte) error {
		r, err := decodeLogRecord(readU64(k[1:]), append([]byte(nil), v...))
		if err != nil {
			return err
		}
		s.logNo = max(s.logNo, r.n)
		if r.n > applied && r.batch != nil {
			b := s.db.NewBatch()
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
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return nil, err
		}
		s.log.Info("applied the log's last commits again", "commits", reapplied)
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
func (s *Store) recoverRecent(records []logRecord) error {
	sealed, err := s.sealedThrough()
	if err != nil {
		return err
	}
	for _, r := range records {
		for _, j := range r.events {
			s.recent.add(j.board, j.event)
			if j.id != "" {
				s.ids.add(key(tagID, j.board, j.id)) // a seal will store it
			}
		}
		for _, p := range r.points {
			s.recent.setPoint(p.seq, r.n)
		}
	}
	// The retraction marks, one scan of each board's range of them rather than a read per
	// event: marks are few, events since a seal up to SealEvents. The list is in sequence
	// order, so a board's first event and its last bound its range.
	type seqs struct{ lo, hi uint64 }
	boards := make(map[string]seqs)
	for i := range s.recent.list {
		board, ev := s.recent.at(int32(i))
		r, ok := boards[board]
		if !ok {
			r.lo = ev.seq
		}
		r.hi = ev.seq
		boards[board] = r
	}
	for board, r := range boards {
		err := scan(s.db, retractKey(board, r.lo), retractKey(board, r.hi+1), func(k, _ []byte) error {
			seq := readU64(k[len(k)-8:])
			if i, ok := s.recent.index(seq); ok {
				if b, _ := s.recent.at(i); b == board {
					s.recent.retract(seq)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// A seal cut short may have handed the store events it never indexed: they are copies
	// of events still in the log, or of events a deletion erased since; drop them.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: sealedKey(sealed+1, ""), UpperBound: []byte{tagSealed + 1}})
	if err != nil {
		return err
	}
	strays := it.First()
	if err := it.Close(); err != nil || !strays {
		return err
	}
	return s.db.DeleteRange(sealedKey(sealed+1, ""), []byte{tagSealed + 1}, pebble.Sync)
}

// sealedThrough is the last sequence number sealed, as stored.
func (s *Store) sealedThrough() (uint64, error) {
	v, ok, err := get(s.db, []byte{tagSealedTo})
	if err != nil || !ok {
		return 0, err
	}
	return readU64(v), nil
}
