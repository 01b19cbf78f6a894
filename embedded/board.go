package embedded

import (
	"cmp"
	"encoding/json"
	"slices"
	"sync/atomic"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// board is what memory holds of a board.
type board struct {
	cfg      laurel.Board
	members  *members
	windows  []*window // in the order of cfg.Windows
	deadline int64     // the next instant advanceBoard has work; noTime: never
	// windowsMade counts the windows made for the board, to put each on a lane (newWindow).
	windowsMade int
	// tagged is set once an event of the board carried a tag: Open finds its entries' tags,
	// and the reads that memory has no tags for look them up (tags.go). tagKept says the
	// store holds its mark; the writer's alone.
	tagged  atomic.Bool
	tagKept bool
	// rate holds the times of the members' events while the board's guard has a rate rule
	// (rate.go); the writer's alone.
	rate *rateTimes
	// topNames keeps the ids and names publishTops looked up for the board's published tops,
	// valid while the store's topGen is topNamesGen (a profile changes only with a new one);
	// the writer's alone.
	topNames    map[uint32]memberName
	topNamesGen uint64
}

// window is what memory holds of one window of a board.
type window struct {
	w    laurel.Window
	name string
	// open holds the spans in memory: a calendar window's open periods that have data, by
	// start; all's one span; a rolling window's current span.
	open []*span
	// closed lists a calendar window's kept closed periods, newest first.
	closed []*closedPeriod
	marks  laurel.Marks
	// dropAt is when the oldest kept closed period is dropped; noTime when none is kept.
	dropAt int64
	// newest is a rolling window's bucket written last at its head, whole in memory: nearly
	// every event falls in it, and reads the member's aggregate there. Nil until a write.
	newest *bucket
	// retired are buckets that were the newest, kept whole in memory until the store shows
	// what submits changed of them (retireBucket).
	retired []*bucket
	// lane is the lane a group's changes to this window are applied on (lanes.go); it never
	// changes, so two changes to one window are never made at once.
	lane uint8
}

// bucket is a rolling window's bucket in memory: every member's aggregate in it.
type bucket struct {
	start      int64
	slots      slots
	dirtyMarks // checkpoint.go
}

// reachBucket makes the bucket of w at start the newest in memory when it is later than the
// one there, loaded whole from the store as committed: the writer's staged writes to it
// follow in its overlay, and reach memory with their commit (setBucket). The store is read
// before the readers' lock is taken; interning needs it. The bucket it replaces is retired.
func (s *Store) reachBucket(tx *txn, b *board, w *window, start int64) {
	old := w.newest
	if old != nil && start <= old.start {
		return
	}
	if old != nil {
		s.retireBucket(tx, b, w, old)
	}
	aggs, err := loadBuckets(s.db, b, w, nil, start, start+1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old != nil {
		w.retired = append(w.retired, old)
	}
	if err != nil {
		s.log.Warn("loading a bucket; its aggregates will be read from the store", "board", b.cfg.ID, "window", w.name, "err", err)
		w.newest = nil
		return
	}
	nb := &bucket{start: start}
	for m, a := range aggs {
		nb.slots.set(b.members.intern(m), slot(fromAgg(a)), b.members.count())
	}
	w.newest = nb
}

// retireBucket stages what the store does not hold yet of nb, which stops being w's newest
// bucket, since only the newest one's aggregates are written behind (checkpoint.go): those
// committed, as of s.seq, in the group's batch; then those the group has staged to be
// written behind, in its batch, and those the operation tx has, in its own, so that an
// operation that fails leaves none of its own. For a key the operation wrote, the group's
// value is the one its undo log keeps. Until the group's commit is in the store's snapshot,
// nb stays in memory, retired, for reads (eachBucket) and writes (setBucket) of it.
func (s *Store) retireBucket(tx *txn, b *board, w *window, nb *bucket) {
	root := tx.group()
	for h := range nb.dirty.all() {
		v, ok := nb.slots.get(h)
		root.setAgg(aggKey(b.cfg.ID, w.name, nb.start, b.members.name(h)), aggregate(v), ok, s.seq)
	}
	nb.dirty = nil
	in := func(k memKey) bool { return k.bucket && k.w == w && k.start == nb.start }
	before := make(map[memKey]undoEntry[memKey, memVal]) // what the operation replaced, as the group has it
	for _, u := range tx.memUndo {
		if _, seen := before[u.k]; !seen && in(u.k) {
			before[u.k] = u
		}
	}
	stage := func(t *txn, k memKey, v memVal) {
		if t.deferredBuckets {
			t.setAgg(aggKey(b.cfg.ID, w.name, nb.start, b.members.name(k.h)), aggregate(v.v), v.present, t.seq)
		}
	}
	for k, v := range root.mem {
		if !in(k) {
			continue
		}
		u, mine := before[k]
		switch {
		case !mine:
			stage(root, k, v)
		case u.had:
			stage(root, k, u.old)
		}
	}
	for k := range before {
		stage(tx, k, root.mem[k])
	}
	root.published = append(root.published, func() {
		w.retired = slices.DeleteFunc(w.retired, func(r *bucket) bool { return r == nb })
	})
}

// bucketAt returns w's bucket at start in memory: the newest or a retired one; nil when the
// store alone holds it.
func (w *window) bucketAt(start int64) *bucket {
	if nb := w.newest; nb != nil && nb.start == start {
		return nb
	}
	for _, r := range w.retired {
		if r.start == start {
			return r
		}
	}
	return nil
}

// inMemory lists w's buckets held whole in memory.
func (w *window) inMemory() []*bucket {
	if w.newest == nil {
		return w.retired
	}
	return append([]*bucket{w.newest}, w.retired...)
}

// setBucket keeps a bucket of w in memory true to member h's bucket aggregate just
// committed; handles is the board's count of members.
func (w *window) setBucket(start int64, h uint32, v slot, present bool, handles int) {
	switch bk := w.bucketAt(start); {
	case bk == nil:
	case present:
		bk.slots.set(h, v, handles)
	default:
		bk.slots.del(h)
	}
}

// closedPeriod is a period frozen on disk with its ranks.
type closedPeriod struct {
	id         string
	start, end int64
	total      uint32   // members ranked when it closed, hidden ones included
	removed    []uint32 // frozen ranks of members deleted since, sorted; stored
	hidden     []uint32 // frozen ranks of members hidden now, sorted; derived
	excluded   []uint32 // removed ∪ hidden, sorted
}

func (cp *closedPeriod) Bounds() laurel.Span { return laurel.Span{Start: cp.start, End: cp.end} }

func (sp *span) Bounds() laurel.Span { return laurel.Span{Start: sp.start, End: sp.end} }

func newBoard(cfg laurel.Board) *board {
	b := &board{cfg: cfg, members: newMembers(), deadline: noTime}
	for _, w := range cfg.Windows {
		b.windows = append(b.windows, b.newWindow(w))
	}
	return b
}

// newWindow makes a window of b, on the lane after the last window made's.
func (b *board) newWindow(w laurel.Window) *window {
	b.windowsMade++
	return &window{w: w, name: w.String(), marks: laurel.NoMarks, dropAt: noTime, lane: uint8(b.windowsMade % lanes)}
}

// treeOptions are the options of sp's tree: its keys' times, and on a board with a subscore
// their subscores, are those of sp's aggregates.
func (b *board) treeOptions(sp *span) rank.Options {
	o := rank.Options{Desc: b.cfg.Order == laurel.Desc, Tie: b.members.tie, TimeOf: sp.timeOf}
	if b.cfg.Subscore != nil {
		o.Sub, o.SubDesc, o.SubOf = true, *b.cfg.Subscore == laurel.Desc, sp.slots.subOf
	}
	return o
}

func (b *board) window(name string) *window {
	for _, w := range b.windows {
		if w.name == name {
			return w
		}
	}
	return nil
}

// span returns the in-memory span that starts at start (rollingSpan for a rolling window's
// current one), or nil.
func (w *window) span(start int64) *span {
	if w.w.IsRolling() || w.w.Kind == laurel.WindowAll {
		if len(w.open) == 0 {
			return nil
		}
		return w.open[0]
	}
	i, ok := slices.BinarySearchFunc(w.open, start, func(s *span, t int64) int { return cmp.Compare(s.start, t) })
	if !ok {
		return nil
	}
	return w.open[i]
}

// spanFor returns the span of w starting at start, creating it when create is set.
func (b *board) spanFor(w *window, start, end int64, create bool) *span {
	sp := w.span(start)
	if sp == nil && create {
		sp = newSpan(b, start, end)
		if w.w.IsCalendar() {
			i, _ := slices.BinarySearchFunc(w.open, start, func(s *span, t int64) int { return cmp.Compare(s.start, t) })
			w.open = slices.Insert(w.open, i, sp)
		} else {
			w.open = []*span{sp}
		}
	}
	return sp
}

// set sets member's aggregate in sp, and keeps the span's tree in step: hidden members have
// aggregates but no place in trees. A nil span holds nothing, so there is nothing to remove.
func (b *board) set(e *Store, sp *span, member string, v slot, present bool) {
	var h uint32
	if present {
		h = b.members.intern(member)
	} else {
		var ok bool
		if h, ok = b.members.lookup(member); !ok {
			return
		}
	}
	b.setHandle(e, sp, h, member, v, present)
}

// setHandle is set for a member whose handle h is known.
func (b *board) setHandle(e *Store, sp *span, h uint32, member string, v slot, present bool) {
	if sp == nil {
		return
	}
	// A span recovered at Open has no tree until replay is done (buildTrees).
	ranked := sp.tree != nil && e.ranked(member)
	old, had := sp.slots.get(h)
	placed := false
	if had && ranked {
		if present {
			// Most changes move a key past a few neighbours in its leaf: one descent.
			placed, _ = sp.tree.Replace(treeKey(h, old), treeKey(h, v))
		} else {
			sp.tree.Delete(treeKey(h, old))
		}
	}
	if !present {
		sp.slots.del(h)
		sp.tags.del(h)
		return
	}
	// The tree asks the slots for times: the new one is set once the old key is gone.
	sp.slots.set(h, v, b.members.count())
	if ranked && !placed {
		sp.tree.Insert(treeKey(h, v))
	}
}

// updateDeadline notes when the board next has a period to close, a closed period to drop
// or a bucket to leave.
func (b *board) updateDeadline() {
	d := int64(noTime)
	for _, w := range b.windows {
		var oldest laurel.Span
		if len(w.open) > 0 {
			oldest = w.open[0].Bounds()
		}
		d = laurel.Earliest(d, laurel.Deadline(&b.cfg, w.w, oldest, len(w.open) > 0, w.dropAt))
	}
	b.deadline = d
}

func encodeBoard(b *laurel.Board) []byte {
	v, err := json.Marshal(b.Record())
	if err != nil {
		panic("embedded: encoding a board: " + err.Error())
	}
	return v
}

func decodeBoard(id string, v []byte) (laurel.Board, error) {
	var r laurel.BoardRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return laurel.Board{}, err
	}
	return r.Board(id)
}
