package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// Hooks for the black-box tests of package embedded_test, compiled only with them.

// IDFilterReady reports whether the store's event id filter has scanned the stored ids, so
// that a test can tell which way a duplicate was found.
func (s *Store) IDFilterReady() bool { return s.ids.ready.Load() }

// IDFilter is the store's event id filter, alone.
type IDFilter struct{ f *idFilter }

// NewIDFilter returns an empty filter, not ready: as Open makes it, before its scan of the
// stored ids.
func NewIDFilter() IDFilter { return IDFilter{newIDFilter(0)} }

// Ready ends the scan: the filter answers from now on.
func (f IDFilter) Ready() { f.f.ready.Store(true) }

// IDFilterMaybe reports whether the store's id filter lets the id of board through to a
// lookup (it is not ready, or it may hold the id).
func (s *Store) IDFilterMaybe(board, id string) bool { return !s.ids.absent(key(tagID, board, id)) }

func (f IDFilter) Add(k []byte)         { f.f.add(k) }
func (f IDFilter) Absent(k []byte) bool { return f.f.absent(k) }
func (f IDFilter) Bytes() int           { return f.f.bytes() }

// TopHeld reports whether a published top of the board's window holds now (top.go).
func (s *Store) TopHeld(board, window string) bool {
	found, _ := s.tops.Load(topKey{board, window})
	v, _ := found.(*topView)
	return v != nil && v.gen == s.topGen.Load() && s.now() < v.until
}

// WrittenBytes is what the store's Pebble instances have written to tables so far, by
// flushes and compactions: the main store's and the log's.
func (s *Store) WrittenBytes() (store, log uint64) {
	written := func(db interface{ Metrics() *pebble.Metrics }) uint64 {
		t := db.Metrics().Total()
		return t.TableBytesFlushed + t.TableBytesCompacted
	}
	return written(s.db), written(s.logDB)
}

// LogRecordPoints reads the history points of a log record both ways: decoded whole, as Open
// does, and skipping its events, as a seal does.
func LogRecordPoints(b []byte) (whole, skipped map[uint64]string, wholeErr, skipErr error) {
	rec, wholeErr := decodeLogRecord(1, b)
	whole = make(map[uint64]string)
	for _, p := range rec.points {
		whole[p.seq] = string(p.point)
	}
	skipped = make(map[uint64]string)
	skipErr = eachLogPoint(b, func(seq uint64, point []byte) { skipped[seq] = string(point) })
	return whole, skipped, wholeErr, skipErr
}

// LogRecord encodes a log record of events (board, member, id, value, ts each) and points.
func LogRecord(now int64, events [][5]string, points map[uint64]string) []byte {
	var logged []loggedEvent
	for i, ev := range events {
		v, _ := strconv.ParseInt(ev[3], 10, 64)
		ts, _ := strconv.ParseInt(ev[4], 10, 64)
		logged = append(logged, loggedEvent{board: ev[0], event: event{member: ev[1], id: ev[2], value: v, ts: ts, seq: uint64(i + 1)}})
	}
	var ps []pointRecord
	for seq, p := range points {
		ps = append(ps, pointRecord{seq, []byte(p)})
	}
	return appendLogRecord(nil, now, logged, ps, []byte("batch"))
}

// Members is a board's member table (memory.go), alone.
type Members struct{ m *members }

func NewMembers() Members { return Members{newMembers()} }

func (m Members) Intern(id string) uint32         { return m.m.intern(id) }
func (m Members) Lookup(id string) (uint32, bool) { return m.m.lookup(id) }

// LookupAt is Lookup given a hint (members.lookupAt); Ordered says the first n handles are in
// the order of their ids' bytes, as a table filled from a checkpoint section is.
func (m Members) LookupAt(id string, hint uint32) (uint32, bool) { return m.m.lookupAt(id, hint) }
func (m Members) Ordered(n uint32)                               { m.m.ordered = n }
func (m Members) Name(h uint32) string                           { return m.m.name(h) }
func (m Members) Count() int                                     { return m.m.count() }

// Reserve, Add and IndexBehind are how Open fills a table from a checkpoint file's ids in
// order: made at its size, the ids appended without a probe, then put in the table on a
// goroutine of its own (members.indexBehind). Tie orders two handles' members on full ties.
func (m Members) Reserve(n, size int)  { m.m.reserve(n, size) }
func (m Members) Add(id string) uint32 { return m.m.add(id) }
func (m Members) IndexBehind()         { m.m.indexBehind() }
func (m Members) Tie(a, b uint32) int  { return m.m.tie(a, b) }

// Slots is a span's aggregates by handle (memory.go), alone.
type Slots struct{ s *slots }

func NewSlots() Slots { return Slots{&slots{}} }

// Set stores member h's score and time; handles is the board's count of members.
func (s Slots) Set(h uint32, score, at int64, handles int) {
	s.s.set(h, slot{score: score, at: at}, handles)
}

// SetSub stores member h's score, subscore and time.
func (s Slots) SetSub(h uint32, score, sub, at int64, handles int) {
	s.s.set(h, slot{score: score, at: at, sub: sub}, handles)
}

// GetSub returns member h's score, subscore and time.
func (s Slots) GetSub(h uint32) (score, sub, at int64, ok bool) {
	v, ok := s.s.get(h)
	return v.score, v.sub, v.at, ok
}

// EachSub calls fn with every entry's subscore.
func (s Slots) EachSub(fn func(h uint32, sub int64)) {
	s.s.each(func(h uint32, v slot) { fn(h, v.sub) })
}

// KeepsSubs reports whether the slots made room for subscores: not before the first that is
// not 0.
func (s Slots) KeepsSubs() bool { return s.s.subs != nil }

func (s Slots) Get(h uint32) (score, at int64, ok bool) {
	v, ok := s.s.get(h)
	return v.score, v.at, ok
}

func (s Slots) Del(h uint32) { s.s.del(h) }
func (s Slots) Len() int     { return s.s.n }
func (s Slots) Clone() Slots { c := s.s.clone(); return Slots{&c} }

func (s Slots) Each(fn func(h uint32, score, at int64)) {
	s.s.each(func(h uint32, v slot) { fn(h, v.score, v.at) })
}

// Chunks counts the chunks that hold times as offsets (narrow) and whole (wide); none while
// the entries are in a map.
func (s Slots) Chunks() (narrow, wide int) {
	for _, c := range s.s.dense {
		if c.near != nil {
			narrow++
		} else {
			wide++
		}
	}
	return narrow, wide
}

// WholeIDRecords rewrites the id records of the closed store in dir as versions before
// 2026-11-28 wrote them: under I, not in runs, each the event's sequence number, value, time,
// flags and member, rather than its sequence number alone.
func WholeIDRecords(dir string) (int, error) {
	db, _, err := openStore(dir, Options{}.withDefaults(), 0)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	batch := db.NewBatch()
	defer batch.Close()
	n := 0
	err = scanPrefix(db, []byte{tagIDRun}, func(k, v []byte) error {
		k = idKeyOfRun(nil, k)
		board, _, _ := bytes.Cut(k[1:], []byte{0})
		se, ok, err := readSealed(db, string(board), readU64(v))
		if err != nil || !ok {
			return cmp.Or(err, errCorrupt)
		}
		ev := se.event
		whole := appendU64(appendU64(appendU64(nil, ev.seq), uint64(ev.value)), uint64(ev.ts))
		n++
		return batch.Set(k, append(append(whole, ev.flags), ev.member...), nil)
	})
	if err == nil {
		err = batch.DeleteRange([]byte{tagIDRun}, []byte{tagIDRun + 1}, nil)
	}
	if err == nil {
		err = batch.Commit(pebble.Sync)
	}
	return n, err
}

// SpanChunks counts the chunks of the current span of a board's window that hold times as
// offsets (narrow) and whole (wide).
func (s *Store) SpanChunks(board, window string) (narrow, wide int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.boards[board]
	if sp := s.currentSpan(b, b.window(window), s.now()); sp != nil {
		return Slots{&sp.slots}.Chunks()
	}
	return 0, 0
}

// Queued is how many operations wait for the writer.
func (s *Store) Queued() int { return len(s.ops) }

// IDRunTiers waits for the merges of id runs under way, and those they lead to, then returns
// the tier of each run listed, oldest first.
func (s *Store) IDRunTiers(ctx context.Context) ([]int, error) {
	tiers, _, err := s.FinishMerges(ctx)
	return tiers, err
}

// FinishMerges is IDRunTiers, saying too how many merges it put in place itself: each, the
// last thing the writer did before the next read.
func (s *Store) FinishMerges(ctx context.Context) (tiers []int, finished int, err error) {
	// In run, in the writer between groups: finish runs under the readers' lock, which a
	// merge's events take (putMergedEvents).
	err = s.do(ctx, &op{exclusive: true, run: func(*txn) error {
		for s.idMerging != nil {
			s.finishIDMerge(<-s.idMerging.done)
			finished++
		}
		for _, r := range s.idRuns {
			tiers = append(tiers, int(r.tier))
		}
		return nil
	}})
	return tiers, finished, err
}

// SealedEventTables counts the store's tables whose keys reach among the sealed events'.
func (s *Store) SealedEventTables() (int, error) {
	levels, err := s.db.SSTables()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, level := range levels {
		for _, t := range level {
			if bytes.Compare(t.Smallest.UserKey, []byte{tagSealed + 1}) < 0 && bytes.Compare(t.Largest.UserKey, []byte{tagSealed}) >= 0 {
				n++
			}
		}
	}
	return n, nil
}

// WithIDFilterFirst sets the capacity of the id filter's first Bloom filter, so that a test
// grows and rebuilds it with few ids.
func WithIDFilterFirst(o Options, n int) Options {
	o.idFilterFirst = n
	return o
}

// IDFilterRebuilds counts the rebuilds of the store's id filter so far.
func (s *Store) IDFilterRebuilds() int {
	s.ids.mu.Lock()
	defer s.ids.mu.Unlock()
	return s.ids.rebuilt
}

// SortedRun is the records (key, value) of a file a seal writes.
type SortedRun struct{ r *sortedRun }

// NewSortedRun holds records as a seal does before writing them to a table.
func NewSortedRun(records [][2][]byte) SortedRun {
	r := newSortedRun(len(records), 16)
	for _, kv := range records {
		start := len(r.arena)
		r.arena = append(r.arena, kv[0]...)
		keyEnd := len(r.arena)
		r.arena = append(r.arena, kv[1]...)
		r.add(start, keyEnd)
	}
	return SortedRun{r}
}

// Sort sorts the run as a seal does, and returns its records in that order.
func (s SortedRun) Sort() [][2][]byte {
	var out [][2][]byte
	for _, rec := range s.r.sort() {
		out = append(out, [2][]byte{s.r.keyOf(rec), s.r.valueOf(rec)})
	}
	return out
}

// SortOnly sorts the run as a seal does, and nothing more.
func (s SortedRun) SortOnly() { s.r.sort() }

// PebbleErrorf logs as Pebble's errors are logged to log.
func PebbleErrorf(log *slog.Logger, format string, args ...any) {
	pebbleLogger{log: log}.Errorf(format, args...)
}

// SpanTags is the tags a span keeps beside its entries, alone.
type SpanTags struct{ t *spanTags }

func NewSpanTags() SpanTags { return SpanTags{new(spanTags)} }

// Set sets h's tag, "" for none; Get returns it; ArenaLen is the bytes its arena holds.
func (s SpanTags) Set(h uint32, tag string) { s.t.set(h, tag) }
func (s SpanTags) Get(h uint32) string      { return string(s.t.get(h)) }
func (s SpanTags) ArenaLen() int            { return len(s.t.arena) }

// SortKeys puts keys in rank order as a board of that order (and subscore order, when sub is
// not nil) whose members m names does when it builds a tree (ranksort.go), through scratch.
func SortKeys(order laurel.Order, sub *laurel.Order, m Members, keys []rank.Key, scratch *[]rank.Key) {
	sortKeys(&board{cfg: laurel.Board{Order: order, Subscore: sub}, members: m.m}, keys, scratch)
}

// SortFlatKeys is SortKeys for a board without a subscore as Open sorts its keys: 24 bytes a
// key (ranksort.go); keys' subscores are left out.
func SortFlatKeys(order laurel.Order, m Members, keys []rank.Key) {
	flat := make([]flatKey, len(keys))
	for i, k := range keys {
		flat[i] = flatKey{k.Score, k.At, k.Member}
	}
	var scratch []flatKey
	sortFlatKeys(&board{cfg: laurel.Board{Order: order}, members: m.m}, flat, &scratch)
	for i, k := range flat {
		keys[i] = rank.Key{Score: k.score, At: k.at, Member: k.member}
	}
}

// KeyCheckpoints writes the checkpoint file in dir again as builds before sections wrote it
// (cpsection.go): each entry of a section as a keyed record, the other records as they are,
// in frames numbered as they were, but none of rolling windows' buckets (StripBuckets). It
// returns the entries it keyed.
func KeyCheckpoints(fs vfs.FS, dir string) (keyed int, err error) {
	ids := make(map[string][]string) // by board, the ids its section named, by handle
	err = rewriteCPFile(fs, dir, func(recs []byte, r *cpRecord, k aggKeyParts) ([]byte, error) {
		switch r.kind {
		case cpMembers:
			board := string(k.board)
			return recs, readMembers(r.body, func(membersHead) error { return nil },
				func(id []byte) { ids[board] = append(ids[board], string(id)) })
		case cpSpan:
			var asOf uint64
			err := readSpan(r.body, func(sh spanHead) error { asOf = sh.asOf; return nil }, func(h uint32, v slot) error {
				recs = appendCPSet(recs, append(slices.Clone(r.key), ids[string(k.board)][h]...), aggregate(v), asOf)
				keyed++
				return nil
			})
			return recs, err
		}
		return appendCPRecord(recs, r), nil
	})
	return keyed, err
}

// StripBuckets writes the checkpoint file in dir again as builds before it held the rolling
// windows' buckets wrote it: without their records (cpsection.go, "Buckets").
func StripBuckets(fs vfs.FS, dir string) error {
	return rewriteCPFile(fs, dir, func(recs []byte, r *cpRecord, _ aggKeyParts) ([]byte, error) {
		return appendCPRecord(recs, r), nil
	})
}

// rewriteCPFile writes the checkpoint file in dir again, each frame's records as fn appends
// them, those of rolling windows left out: builds before it held their buckets wrote none.
func rewriteCPFile(fs vfs.FS, dir string, fn func(recs []byte, r *cpRecord, k aggKeyParts) ([]byte, error)) error {
	var out []byte
	err := eachCPFrame(fs, dir, func(n uint64, payload []byte) error {
		var recs []byte
		err := eachCPRecord(payload, func(r *cpRecord) error {
			k, err := parseAggKey(r.key)
			if err != nil {
				return err
			}
			if w, err := laurel.ParseWindow(string(k.window)); k.hasWindow && err == nil && w.IsRolling() {
				return nil
			}
			recs, err = fn(recs, r, k)
			return err
		})
		out = appendFrame(out, n, recs)
		return err
	})
	if err != nil {
		return err
	}
	f, err := fs.Create(fs.PathJoin(dir, cpFileName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(out); err != nil {
		return err
	}
	return f.Sync()
}

// appendCPRecord appends r to recs as it was read.
func appendCPRecord(recs []byte, r *cpRecord) []byte {
	switch r.kind {
	case cpSet:
		return appendCPKeyed(recs, r.key, r.a, true, r.asOf)
	case cpMembers, cpSpan:
		recs = append(append(append(recs, r.kind), binary.AppendUvarint(nil, uint64(len(r.key)))...), r.key...)
		return append(binary.AppendUvarint(recs, uint64(len(r.body))), r.body...)
	}
	return append(append(append(recs, r.kind), binary.AppendUvarint(nil, uint64(len(r.key)))...), r.key...)
}

// CheckpointSections counts the records of sections (cpMembers, cpSpan) in the checkpoint
// file in dir.
func CheckpointSections(fs vfs.FS, dir string) (records int, err error) {
	err = eachCPFrame(fs, dir, func(_ uint64, payload []byte) error {
		return eachCPRecord(payload, func(r *cpRecord) error {
			if r.kind == cpMembers || r.kind == cpSpan {
				records++
			}
			return nil
		})
	})
	return records, err
}

// eachCPFrame calls fn for each whole frame of the checkpoint file in dir, up to its end or
// a frame of zeros.
func eachCPFrame(fs vfs.FS, dir string, fn func(n uint64, payload []byte) error) error {
	f, err := fs.Open(fs.PathJoin(dir, cpFileName))
	if err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	for len(b) >= cpFrameHeader {
		n, length := readU64(b), binary.BigEndian.Uint32(b[8:])
		if n == 0 || len(b)-cpFrameHeader < int(length) {
			return nil
		}
		if err := fn(n, b[cpFrameHeader:cpFrameHeader+length]); err != nil {
			return err
		}
		b = b[cpFrameHeader+length:]
	}
	return nil
}

// appendCPSet appends to b the keyed record that sets the aggregate of key k, as a rewrite
// wrote each before sections.
func appendCPSet(b, k []byte, a aggregate, asOf uint64) []byte {
	return appendCPKeyed(b, k, a, true, asOf)
}

// InBackground runs fn on n goroutines at once, each lowered as the store's background work
// is, and waits for them to end.
func InBackground(n int, fn func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			inBackground()
			fn()
		})
	}
	wg.Wait()
}

// BucketsFromFile counts the rolling windows whose current span Open made from the checkpoint
// file's copy of their buckets.
func (s *Store) BucketsFromFile() int { return int(s.bucketsFromFile.Load()) }
