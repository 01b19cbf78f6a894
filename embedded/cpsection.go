package embedded

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// The checkpoint file's sections (cpfile.go): what a rewrite writes of a board. First its
// member ids, each once, in handle order and counted (cpMembers records), then each open
// span's entries by handle (cpSpan records), without the board, window, start and id that a
// keyed record (cpSet) repeats for each. Open thus makes the member table and its arena at
// their size, interns each id once, in order, and sets a span's entries with no hash probe;
// the file is some 8 bytes an entry beside the ids, instead of 45.
//
// A record's body:
//
//	cpMembers (key: the board's prefix): the board's member count, their ids' bytes, this
//	record's first handle (uvarints), then ids (a uvarint length and the bytes each) to its end
//	cpSpan (key: the span's prefix): the last sequence number its entries count (8 bytes), the
//	span's entry count (uvarint), flags (cpSpanSubs, cpSpanFrom), then entries to its end: the
//	handle as a zigzag varint from the entry's before (0 the first's), score and reached_at as
//	varints, and the subscore as a varint when flagged
//
// Handles name the members of the board's cpMembers records before them. A board's ids and a
// span's entries take as many records as bodies of cpSectionBytes hold, so that each fits a
// frame.
//
// Buckets. A rolling window's buckets are Pebble's (checkpoint.go), but scanning those of its
// current span at Open, key by key, each decoded and its member found, was a third of an open.
// So the file holds a copy of them: a rewrite writes, for each rolling window, a cpSpan record
// flagged cpSpanFrom under the start of the window's current span, saying that the file holds
// every bucket of the window from that start on, then each such bucket as Pebble holds it, as
// a span's entries (the header's count is the bucket's, its sequence number the rewrite's);
// an entry whose member the board's members record does not name (after a restart, one that
// only older buckets hold, which Open never interned) as a keyed record. Every commit after that stores a bucket aggregate in
// Pebble appends the same keyed record to its frame (txn.setAgg), in the order of its batch,
// so that at each durable commit the file's buckets are Pebble's. A record that drops a
// board's or a window's aggregates drops what the file holds of its buckets, and the window's
// flag with them: a window added anew may find buckets in Pebble that its name had before,
// which the file never held, so Open reads them from Pebble until the next rewrite (a board
// made anew holds none: a commit that makes one writes the flag for its rolling windows).
// Open merges a window's buckets from the file when the flag's start is not later than its
// current span's at now, and scans Pebble otherwise (a file of earlier builds, a window
// without the flag, a clock set back); a file without it for every rolling window is written
// whole again once its sections' part has been appended (as a keyed file is).

const (
	cpSpanSubs     = 1       // a cpSpan's entries carry their subscores
	cpSpanFrom     = 2       // a rolling window's: the file holds every bucket from this start on; no entries
	cpSectionBytes = 1 << 20 // a section's record's body is cut once this large
)

// sectionWriter writes a rewrite's sections as frames numbered n of c.
type sectionWriter struct {
	c    cpFile
	n    uint64
	p    []byte // the frame being filled
	key  []byte
	body []byte
	// names and order are the board's members and their handles in the order of their ids'
	// bytes (nil: the handles' own order); rank is by handle, its place in that order (empty:
	// the handle's own).
	names *members
	order []uint32
	rank  []uint32
	// the entries being written (begin): their records' header, and the entry before
	asOf    uint64
	total   int
	flags   byte
	prev    int64
	entries int
	err     error
}

// record appends a record of kind to the frame, from w.key and w.body, and writes the frame
// once it is large enough.
func (w *sectionWriter) record(kind byte) {
	w.p = append(w.p, kind)
	w.p = binary.AppendUvarint(w.p, uint64(len(w.key)))
	w.p = append(w.p, w.key...)
	w.p = binary.AppendUvarint(w.p, uint64(len(w.body)))
	w.p = append(w.p, w.body...)
	w.flush()
}

// flush writes the frame once it is large enough.
func (w *sectionWriter) flush() {
	if len(w.p) >= cpFrameMax && w.err == nil {
		w.err = w.c.appendFrame(w.n, w.p)
		w.p = w.p[:0]
	}
}

// members writes the ids of names, a board's member table as copied, in the order of their
// bytes: Open interns them in that order, so that the rolling windows' buckets, which it
// scans in key order after, find each member at the handle after the one before (internAt's
// hint) rather than by a hash probe each. The spans of the board then name each member by
// its place in that order (w.rank).
func (w *sectionWriter) members(board string, names *members) {
	w.key = prefix(tagAgg, board)
	count := names.count()
	order := byName(names)
	w.names, w.order = names, order
	w.rank = w.rank[:0]
	if order != nil {
		w.rank = slices.Grow(w.rank, count)[:count]
		for i, h := range order {
			w.rank[h] = uint32(i)
		}
	}
	head := func(first int) {
		w.body = binary.AppendUvarint(w.body[:0], uint64(count))
		w.body = binary.AppendUvarint(w.body, uint64(names.offs[count]))
		w.body = binary.AppendUvarint(w.body, uint64(first))
	}
	head(0)
	for i := range count {
		h := uint32(i)
		if order != nil {
			h = order[i]
		}
		id := names.name(h)
		w.body = binary.AppendUvarint(w.body, uint64(len(id)))
		w.body = append(w.body, id...)
		if len(w.body) >= cpSectionBytes && i+1 < count {
			w.record(cpMembers)
			head(i + 1)
		}
	}
	w.record(cpMembers)
}

// byName returns the handles of names in the order of their ids' bytes; nil when that is
// the handles' own order. A table that Open filled from a section is in that order but for
// the members added since, at its end: those alone are sorted, then merged in.
func byName(names *members) []uint32 {
	n := names.count()
	less := func(a, b uint32) int { return strings.Compare(names.name(a), names.name(b)) }
	k := 1
	for k < n && less(uint32(k-1), uint32(k)) < 0 {
		k++
	}
	if k >= n {
		return nil
	}
	added := make([]uint32, 0, n-k)
	for h := k; h < n; h++ {
		added = append(added, uint32(h))
	}
	slices.SortFunc(added, less)
	order := make([]uint32, 0, n)
	h := uint32(0)
	for _, a := range added {
		for int(h) < k && less(h, a) < 0 {
			order = append(order, h)
			h++
		}
		order = append(order, a)
	}
	for ; int(h) < k; h++ {
		order = append(order, h)
	}
	return order
}

// span writes sc's entries, each counting every event up to asOf, naming their members as
// the board's members record did.
func (w *sectionWriter) span(sc *spanCopy, asOf uint64) {
	w.key = appendTime(appendPrefix(w.key[:0], tagAgg, sc.board, sc.window), sc.start)
	flags := byte(0)
	if sc.slots.subs != nil {
		flags |= cpSpanSubs
	}
	w.begin(asOf, sc.slots.n, flags)
	sc.slots.each(func(h uint32, v slot) {
		if len(w.rank) > 0 {
			h = w.rank[h]
		}
		w.entry(h, v)
	})
	w.end()
}

// begin starts the cpSpan records of w.key's entries: total of them, as flags say.
func (w *sectionWriter) begin(asOf uint64, total int, flags byte) {
	w.asOf, w.total, w.flags = asOf, total, flags
	w.head()
}

func (w *sectionWriter) head() {
	w.body = appendSpanHead(w.body[:0], w.asOf, w.total, w.flags)
	w.prev, w.entries = 0, 0
}

// appendSpanHead appends a cpSpan record's head to b: the last sequence number its entries
// count, how many the span has, its flags (readSpan reads it).
func appendSpanHead(b []byte, asOf uint64, total int, flags byte) []byte {
	return append(binary.AppendUvarint(appendU64(b, asOf), uint64(total)), flags)
}

// entry adds the entry of the member at place h of the members record.
func (w *sectionWriter) entry(h uint32, v slot) {
	w.body = binary.AppendVarint(w.body, int64(h)-w.prev)
	w.body = binary.AppendVarint(w.body, v.score)
	w.body = binary.AppendVarint(w.body, v.at)
	if w.flags&cpSpanSubs != 0 {
		w.body = binary.AppendVarint(w.body, v.sub)
	}
	w.prev, w.entries = int64(h), w.entries+1
	if len(w.body) >= cpSectionBytes {
		w.record(cpSpan)
		w.head()
	}
}

// end writes the entries left.
func (w *sectionWriter) end() {
	if w.entries > 0 {
		w.record(cpSpan) // a span without entries has none, as with keyed records
	}
	w.entries = 0
}

// buckets writes rc's buckets from the start of its current span on, as r holds them ("Buckets"
// above): the record that says so, then each bucket's entries, by the place of their members
// in the board's members record. Both the bucket's keys and that record are in the order of
// the ids' bytes, so each member is found a few comparisons after the one before (placeOf).
func (w *sectionWriter) buckets(r pebble.Reader, board string, rc rollingCopy, asOf uint64) {
	p := prefix(tagAgg, board, rc.window)
	lo, hi := spanPrefix(tagAgg, board, rc.window, rc.from), upper(p)
	counts := make(map[int64]int) // each bucket's entries, for the reader to lay them out once
	if w.err == nil {
		w.err = scanKeys(r, lo, hi, func(k []byte) { counts[readTime(k[len(p):])]++ })
	}
	flags := byte(0)
	if rc.subs {
		flags |= cpSpanSubs
	}
	w.p = appendCPFrom(w.p, board, rc.window, rc.from)
	bucket, at := int64(noTime), 0
	err := scan(r, lo, hi, func(k, v []byte) error {
		if bs := readTime(k[len(p):]); bs != bucket {
			w.end()
			w.key = append(w.key[:0], k[:len(p)+8]...)
			w.begin(asOf, counts[bs], flags)
			bucket, at = bs, 0
		}
		a, err := decodeAgg(v)
		if err != nil {
			return err
		}
		i, ok := w.placeOf(unsafe.String(&k[len(p)+8], len(k)-len(p)-8), at)
		if !ok {
			w.p = appendCPKeyed(w.p, k, a, true, asOf)
			w.flush()
			return nil
		}
		at = i
		w.entry(uint32(i), slot(a))
		return w.err
	})
	w.end()
	if w.err == nil {
		w.err = err
	}
}

// appendCPFrom appends to b the record that says the file holds every bucket of board's
// rolling window from start on (cpSpanFrom).
func appendCPFrom(b []byte, board, window string, start int64) []byte {
	b = append(b, cpSpan)
	b = binary.AppendUvarint(b, uint64(len(board)+len(window)+11))
	b = appendTime(appendPrefix(b, tagAgg, board, window), start)
	var head [10]byte
	body := appendSpanHead(head[:0], 0, 0, cpSpanFrom) // a head alone: it has no entries
	return append(binary.AppendUvarint(b, uint64(len(body))), body...)
}

// placeOf returns the place of id in the board's members record, searching from place at on
// (gallop); false when the record does not name it.
func (w *sectionWriter) placeOf(id string, at int) (int, bool) {
	n := w.names.count()
	nameAt := func(i int) string {
		if w.order != nil {
			return w.names.name(w.order[i])
		}
		return w.names.name(uint32(i))
	}
	i := gallop(at, n, func(i int) bool { return nameAt(i) < id })
	return i, i < n && nameAt(i) == id
}

// finish writes what is left as the last frame, and syncs the file. A file with no
// frame gets one, empty: the durable commits name frame n, and a file without it is corrupt.
func (w *sectionWriter) finish() (size int64, err error) {
	if w.err == nil && (len(w.p) > 0 || w.c.size == 0) {
		w.err = w.c.appendFrame(w.n, w.p)
	}
	if w.err == nil {
		w.err = w.c.f.Sync()
	}
	return w.c.size, w.err
}

// membersHead is a cpMembers record's header: the board's member count and their ids' bytes,
// and the record's first handle.
type membersHead struct{ count, size, first uint64 }

// readMembers decodes a cpMembers record's body, calling fn for each id in turn (valid until
// fn returns).
func readMembers(body []byte, head func(membersHead) error, fn func(id []byte)) error {
	var mh membersHead
	for _, f := range []*uint64{&mh.count, &mh.size, &mh.first} {
		v, k := binary.Uvarint(body)
		if k <= 0 {
			return errCorrupt
		}
		*f, body = v, body[k:]
	}
	if mh.count > 1<<32-1 || mh.size > 1<<32-1 {
		return errCorrupt
	}
	if err := head(mh); err != nil {
		return err
	}
	for len(body) > 0 {
		l, k := binary.Uvarint(body)
		if k <= 0 || uint64(len(body)-k) < l {
			return errCorrupt
		}
		fn(body[k : k+int(l)])
		body = body[k+int(l):]
	}
	return nil
}

// spanHead is a cpSpan record's header.
type spanHead struct {
	asOf, total uint64
	flags       byte
}

// readSpan decodes a cpSpan record's body: its header, then fn for each entry, its handle as
// the file names it.
func readSpan(body []byte, head func(spanHead) error, fn func(h uint32, v slot) error) error {
	if len(body) < 9 {
		return errCorrupt
	}
	sh := spanHead{asOf: readU64(body)}
	var k int
	if sh.total, k = binary.Uvarint(body[8:]); k <= 0 || len(body) < 8+k+1 {
		return errCorrupt
	}
	sh.flags, body = body[8+k], body[8+k+1:]
	if err := head(sh); err != nil {
		return err
	}
	h := int64(0)
	for len(body) > 0 {
		d, n1 := binary.Varint(body)
		score, n2 := binary.Varint(body[max(n1, 0):])
		at, n3 := binary.Varint(body[max(n1+n2, 0):])
		if n1 <= 0 || n2 <= 0 || n3 <= 0 {
			return errCorrupt
		}
		body = body[n1+n2+n3:]
		v := slot{score: score, at: at}
		if sh.flags&cpSpanSubs != 0 {
			sub, n := binary.Varint(body)
			if n <= 0 {
				return errCorrupt
			}
			v.sub, body = sub, body[n:]
		}
		if h += d; h < 0 || h > 1<<32-1 {
			return errCorrupt
		}
		if err := fn(uint32(h), v); err != nil {
			return err
		}
	}
	return nil
}

// fileMembers is what the cpMembers records read so far said of a board: the handle in memory
// of each handle they named.
type fileMembers struct {
	n     uint32   // handles named
	remap []uint32 // by handle named; nil while each is its own handle in memory
	bulk  bool     // its ids are added to the table without a probe (members.add)
}

func (fm *fileMembers) handle(h uint32) (uint32, bool) {
	if h >= fm.n {
		return 0, false
	}
	if fm.remap == nil {
		return h, true
	}
	return fm.remap[h], true
}

// members applies a cpMembers record of b: its ids interned, the table and arena made at
// their size by the board's first record.
func (ap *cpApplier) members(b *board, body []byte) error {
	if ap.files == nil {
		ap.files = make(map[*board]*fileMembers)
	}
	var fm *fileMembers
	var count uint64
	head := func(mh membersHead) error {
		if mh.first == 0 {
			// The ids of a table that holds none yet, strictly in order, are all new: they are
			// appended, and put in the table once the last is (members.indexBehind).
			ap.files[b] = &fileMembers{bulk: b.members.count() == 0}
			b.members.reserve(int(mh.count), int(mh.size))
		}
		if fm = ap.files[b]; fm == nil || uint64(fm.n) != mh.first {
			return errCorrupt
		}
		count = mh.count
		return nil
	}
	m := b.members
	err := readMembers(body, head, func(idBytes []byte) {
		id := unsafe.String(unsafe.SliceData(idBytes), len(idBytes)) // add and intern copy it
		var h uint32
		if fm.bulk && (m.count() == 0 || m.name(uint32(m.count()-1)) < id) {
			h = m.add(id)
		} else {
			fm.bulk = false
			h = m.intern(id)
		}
		if h == m.ordered && (h == 0 || m.name(h-1) < m.name(h)) {
			m.ordered++ // a table filled from a section alone, in order so far
		}
		if fm.remap == nil && h != fm.n {
			fm.remap = make([]uint32, fm.n)
			for i := range fm.remap {
				fm.remap[i] = uint32(i)
			}
		}
		if fm.remap != nil {
			fm.remap = append(fm.remap, h)
		}
		fm.n++
	})
	if err == nil && fm.bulk && uint64(fm.n) == count {
		m.indexBehind()
	}
	return err
}

// span applies a cpSpan record of w's span at start, whose prefix is key.
func (ap *cpApplier) span(b *board, w *window, start int64, key, body []byte) error {
	fm := ap.files[b]
	if fm == nil {
		return errCorrupt
	}
	sp := w.span(start)
	if sp == nil {
		end := int64(0)
		if w.w.IsCalendar() {
			end = b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(start)).End.UnixMilli()
		}
		sp = b.spanFor(w, start, end, true)
	}
	sp.tree = nil
	handles := b.members.count()
	var asOf uint64
	var noteAsOf, keyed bool
	head := func(sh spanHead) error {
		if sp != ap.filling {
			sp.slots.layOut(int(min(sh.total, uint64(handles))), handles)
			ap.filling = sp
		}
		// Replay must know of each entry whether it counts events from where replay starts:
		// nearly never, since a rewrite starts after a commit that checkpoints everything.
		asOf = sh.asOf
		noteAsOf = asOf >= ap.e.cp.replayFrom && asOf > 0
		keyed = noteAsOf || len(ap.asOf) > 0
		return nil
	}
	var k []byte
	return readSpan(body, head, func(fh uint32, v slot) error {
		h, ok := fm.handle(fh)
		if !ok {
			return errCorrupt
		}
		sp.slots.set(h, v, handles)
		if keyed {
			k = append(append(k[:0], key...), b.members.name(h)...)
			if noteAsOf {
				ap.asOf[string(k)] = asOf
			} else {
				delete(ap.asOf, string(k))
			}
		}
		return nil
	})
}

// fileBuckets is what the checkpoint file holds of a rolling window's buckets: every one from
// start from on, by handle.
type fileBuckets struct {
	from    int64
	buckets map[int64]*slots
}

func (fb *fileBuckets) bucket(start int64) *slots {
	sl := fb.buckets[start]
	if sl == nil {
		sl = &slots{}
		fb.buckets[start] = sl
	}
	return sl
}

// bucket applies a record of w's buckets, of b: a section's (cpSpan), or a keyed record a
// commit appended. One of a bucket before the file's start for the window is past.
func (ap *cpApplier) bucket(b *board, w *window, r *cpRecord, k aggKeyParts) error {
	if r.kind == cpSpan {
		if len(k.member) > 0 {
			return errCorrupt
		}
		return ap.bucketSection(b, w, k.start, r.body)
	}
	fb := ap.rolling[w]
	if fb == nil || k.start < fb.from {
		return nil
	}
	sl := fb.bucket(k.start)
	member := unsafe.String(unsafe.SliceData(k.member), len(k.member)) // intern copies it
	if r.kind == cpDel {
		if h, ok := b.members.lookup(member); ok {
			sl.del(h)
		}
		return nil
	}
	h := b.members.internAt(member, ap.hint)
	ap.hint = h + 1
	sl.set(h, slot(r.a), b.members.count())
	return nil
}

// bucketSection applies a cpSpan record of w's bucket at start, or the one that says from
// where the file holds w's buckets.
func (ap *cpApplier) bucketSection(b *board, w *window, start int64, body []byte) error {
	fm := ap.files[b] // nil before a board's first members record: its entries are corrupt
	if ap.rolling == nil {
		ap.rolling = make(map[*window]*fileBuckets)
	}
	handles := b.members.count()
	var sl *slots
	head := func(sh spanHead) error {
		if sh.flags&cpSpanFrom != 0 {
			ap.rolling[w] = &fileBuckets{from: start, buckets: make(map[int64]*slots)}
			return nil
		}
		fb := ap.rolling[w]
		if fb == nil || start < fb.from {
			return errCorrupt // a rewrite writes the window's start first
		}
		if sl = fb.bucket(start); sl != ap.fillingBucket {
			sl.layOut(int(min(sh.total, uint64(handles))), handles)
			ap.fillingBucket = sl
		}
		return nil
	}
	return readSpan(body, head, func(fh uint32, v slot) error {
		if fm == nil || sl == nil {
			return errCorrupt
		}
		h, ok := fm.handle(fh)
		if !ok {
			return errCorrupt
		}
		sl.set(h, v, handles)
		return nil
	})
}

// span makes the rolling window's span [start, end) of b from the buckets in it, merged by
// handle, each member's aggregates in the order of their buckets, as a scan of Pebble merges
// them (recoverRolling). The largest bucket becomes the span, the others merged into it: the
// merge is associative, and most entries are then not touched. Its tree is built once replay
// has added what the span lacks (buildTrees).
func (fb *fileBuckets) span(b *board, start, end int64) *span {
	sp := &span{start: start, end: end}
	var starts []int64
	base := int64(noTime)
	for bs, sl := range fb.buckets {
		if bs >= start && bs < end && sl.n > 0 {
			starts = append(starts, bs)
			if base == noTime || sl.n > fb.buckets[base].n {
				base = bs
			}
		}
	}
	if len(starts) == 0 {
		return sp
	}
	slices.Sort(starts)
	sp.slots = *fb.buckets[base]
	handles := b.members.count()
	for _, bs := range starts {
		if bs == base {
			continue
		}
		fb.buckets[bs].each(func(h uint32, v slot) {
			a, in := toAgg(aggregate(v), true), laurel.Agg{}
			if cur, ok := sp.slots.get(h); ok {
				in = toAgg(aggregate(cur), true)
			}
			older, newer := a, in // a's bucket before the base
			if bs > base {
				older, newer = in, a
			}
			if c, err := laurel.Merge(b.cfg.Mode, b.cfg.Ordering(), older, newer); err == nil {
				sp.slots.set(h, slot(fromAgg(c)), handles)
			}
		})
	}
	return sp
}

// reserve readies the table for n more ids of size bytes in all: it is resized once, not
// doubled on the way, and the arena and offsets are made at their size.
func (m *members) reserve(n, size int) {
	m.awaitIndex()
	m.arena = growHuge(m.arena, size)
	m.offs = growHuge(m.offs, n)
	want := len(m.table)
	for 4*(m.count()+n) > 3*want {
		want *= 2
	}
	if want != len(m.table) {
		m.resize(want)
	}
}
