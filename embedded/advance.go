package embedded

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// advanceBoard brings b to tx.now: calendar periods whose late_limit has passed since their
// end are frozen to disk with their ranks (and the oldest dropped beyond keep), and rolling
// windows move to the span of now.
func (s *Store) advanceBoard(tx *txn, b *board) error {
	for _, w := range b.windows {
		switch {
		case w.w.IsCalendar():
			n := laurel.Closing(&b.cfg, w.marks, w.open, tx.now)
			if n == 0 {
				if laurel.Due(w.dropAt, tx.now) {
					s.keepClosed(tx, b, w, slices.Clone(w.closed), &b.cfg)
				}
				continue
			}
			closing := w.open[:n]
			closed := slices.Clone(w.closed)
			for _, sp := range closing {
				cp := s.freeze(tx, b, w, sp.start, sp.end, spanEntries(b, sp))
				tx.dropSpans(spanPrefix(tagAgg, b.cfg.ID, w.name, sp.start))
				closed = slices.Insert(closed, 0, cp)
			}
			tx.onCommit(b, func() { w.open = slices.Clone(w.open[n:]) })
			s.keepClosed(tx, b, w, closed, &b.cfg)
		case w.w.IsRolling():
			if err := s.roll(tx, b, w); err != nil {
				return err
			}
		}
	}
	tx.touched[b] = true
	return nil
}

// keepClosed makes closed (newest first) w's closed periods, dropping those that are no
// longer kept under cfg at tx.now, and notes when the oldest kept one will be dropped.
func (s *Store) keepClosed(tx *txn, b *board, w *window, closed []*closedPeriod, cfg *laurel.Board) {
	s.keepClosedWith(tx, b, w, closed, cfg, w.marks)
}

// keepClosedWith is keepClosed under marks about to be w's.
func (s *Store) keepClosedWith(tx *txn, b *board, w *window, closed []*closedPeriod, cfg *laurel.Board, m laurel.Marks) {
	n, dropAt := laurel.Kept(cfg, w.w, m, closed, tx.now)
	id := b.cfg.ID
	for _, cp := range closed[n:] {
		tx.delRange(spanPrefix(tagRank, id, w.name, cp.start), spanPrefix(tagRank, id, w.name, cp.start+1))
		tx.delRange(spanPrefix(tagMember, id, w.name, cp.start), spanPrefix(tagMember, id, w.name, cp.start+1))
		tx.del(closedKey(id, w.name, cp.start))
	}
	closed = closed[:n]
	tx.onCommit(b, func() { w.closed, w.dropAt = closed, dropAt })
}

// dropTime returns when the oldest of closed (newest first) is dropped; noTime when closed
// is empty.
func dropTime(cfg *laurel.Board, w laurel.Window, closed []*closedPeriod, m laurel.Marks) int64 {
	if len(closed) == 0 {
		return noTime
	}
	return m.DropTime(cfg, w, closed[len(closed)-1].start)
}

// entry is a member's aggregate with its id, for sorting outside a tree.
type entry struct {
	member string
	agg    aggregate
}

// spanEntries lists every member of an in-memory span, hidden ones included.
func spanEntries(b *board, sp *span) []entry {
	out := make([]entry, 0, sp.slots.n)
	sp.slots.each(func(h uint32, v slot) { out = append(out, entry{b.members.name(h), aggregate(v)}) })
	return out
}

// freeze writes a closed period: every entry by rank and every rank by member.
func (s *Store) freeze(tx *txn, b *board, w *window, start, end int64, entries []entry) *closedPeriod {
	slices.SortFunc(entries, func(x, y entry) int {
		return laurel.CompareRanked(b.cfg.Ordering(), x.agg.key(), x.member, y.agg.key(), y.member)
	})
	id := b.cfg.ID
	cp := &closedPeriod{
		id:    b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(start)).ID,
		start: start, end: end, total: uint32(len(entries)),
	}
	var rk [4]byte
	for i, en := range entries {
		r := uint32(i + 1)
		tx.set(rankKey(id, w.name, start, r), encodeFrozen(frozen{rank: r, member: en.member, agg: en.agg}, b.cfg.Subscore != nil))
		binary.BigEndian.PutUint32(rk[:], r)
		tx.set(frozenMemberKey(id, w.name, start, en.member), rk[:])
		if s.hidden[en.member] {
			cp.hidden = append(cp.hidden, r)
		}
	}
	cp.updateExcluded()
	tx.set(closedKey(id, w.name, start), encodeClosed(cp, nil))
	return cp
}

func closedKey(board, window string, start int64) []byte {
	return appendTime(prefix(tagClosed, board, window), start)
}

// encodeClosed: end, total, len(id), id, removed ranks.
func encodeClosed(cp *closedPeriod, removed []uint32) []byte {
	b := make([]byte, 0, 13+len(cp.id)+4*len(removed))
	b = appendTime(b, cp.end)
	b = binary.BigEndian.AppendUint32(b, cp.total)
	b = append(b, byte(len(cp.id)))
	b = append(b, cp.id...)
	for _, r := range removed {
		b = binary.BigEndian.AppendUint32(b, r)
	}
	return b
}

func decodeClosed(start int64, v []byte) (*closedPeriod, error) {
	if len(v) < 13 || len(v) < 13+int(v[12]) || (len(v)-13-int(v[12]))%4 != 0 {
		return nil, errCorrupt
	}
	cp := &closedPeriod{start: start, end: readTime(v), total: binary.BigEndian.Uint32(v[8:])}
	n := int(v[12])
	cp.id = string(v[13 : 13+n])
	for r := v[13+n:]; len(r) > 0; r = r[4:] {
		cp.removed = append(cp.removed, binary.BigEndian.Uint32(r))
	}
	return cp, nil
}

// frozenRankOf returns a member's rank in a closed period, as frozen.
func frozenRankOf(r pebble.Reader, board, window string, start int64, member string) (uint32, bool, error) {
	v, ok, err := get(r, frozenMemberKey(board, window, start, member))
	if err != nil || !ok {
		return 0, false, err
	}
	if len(v) != 4 {
		return 0, false, errCorrupt
	}
	return binary.BigEndian.Uint32(v), true, nil
}

// roll moves a rolling window to the span of tx.now. A bucket that leaves costs work in
// proportion to its members: in sum and last modes a member whose latest event lies in the
// leaving bucket (the oldest of the span) leaves, and any other keeps its reached_at (sum:
// minus the bucket's score); in best mode the best of the remaining buckets is read back.
// Buckets that enter (events up to five minutes ahead of the clock) are merged in.
func (s *Store) roll(tx *txn, b *board, w *window) error {
	sp := w.open[0]
	r, ok := b.cfg.RollTo(w.w, sp.Bounds(), tx.now)
	if !ok {
		return nil
	}
	start, end := r.To.Start, r.To.End
	id, m, o := b.cfg.ID, b.cfg.Mode, b.cfg.Ordering()
	if r.Whole {
		aggs, err := loadBuckets(s.db, b, w, w.inMemory(), start, end)
		if err != nil {
			return err
		}
		tx.onCommit(b, func() { w.open[0] = buildSpan(s, b, start, end, aggs) })
		return nil
	}
	cal := b.cfg.Calendar()
	recheck := make(map[string]bool)
	bucketEnd := make(map[int64]int64)
	err := eachBucket(s.db, b, w, w.inMemory(), r.Leaving.Start, r.Leaving.End, func(bs int64, member string, a aggregate) error {
		cur, ok := tx.memGet(b, w, member)
		if !ok {
			return nil
		}
		if m == laurel.Best {
			recheck[member] = true
			return nil
		}
		be, ok := bucketEnd[bs]
		if !ok {
			_, t := cal.Bucket(w.w, time.UnixMilli(bs))
			be = t.UnixMilli()
			bucketEnd[bs] = be
		}
		switch {
		case cur.at < be: // every event of the member in the span is in this bucket
			tx.memSet(b, w, member, slot{}, false)
		case m == laurel.Sum:
			d, ok := subInt64(cur.score, a.score)
			dsub, subOK := subInt64(cur.sub, a.sub)
			if !ok || !subOK {
				recheck[member] = true // the rest of the sum does not fit alone; recount it
				return nil
			}
			tx.memSet(b, w, member, slot{score: d, at: cur.at, sub: dsub}, true)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = eachBucket(s.db, b, w, w.inMemory(), r.Entering.Start, r.Entering.End, func(_ int64, member string, a aggregate) error {
		cur, ok := tx.memGet(b, w, member)
		next, err := laurel.Merge(m, o, toAgg(aggregate(cur), ok), toAgg(a, true))
		if err != nil {
			recheck[member] = true
			return nil
		}
		tx.memSet(b, w, member, slot(fromAgg(next)), true)
		return nil
	})
	if err != nil {
		return err
	}
	if len(recheck) > 0 {
		var buckets []int64
		for t := start; t < end; {
			bs, be := cal.Bucket(w.w, time.UnixMilli(t))
			buckets = append(buckets, bs.UnixMilli())
			t = be.UnixMilli()
		}
		for member := range recheck {
			var c laurel.Agg
			h, known := b.members.lookup(member)
			for _, bs := range buckets {
				a, ok, err := tx.bucketGet(b, w, bs, h, known, member)
				if err != nil {
					return err
				}
				if ok {
					if c, err = laurel.Merge(m, o, c, toAgg(a, true)); err != nil {
						// Sums that were each checked can add up past int64 when the
						// bucket that balanced them leaves; keep the member at the
						// bound rather than wrap around.
						s.log.Error("rolling sum out of int64 range", "board", id, "window", w.name, "member", member)
					}
				}
			}
			tx.memSet(b, w, member, slot(fromAgg(c)), c.Present())
		}
	}
	tx.onCommit(b, func() { sp.start, sp.end = start, end })
	return nil
}

// subInt64 returns x−y and whether it did not overflow.
func subInt64(x, y int64) (int64, bool) {
	d := x - y
	return d, !(y > 0 && d > x || y < 0 && d < x)
}

// loadBuckets merges a rolling window's bucket aggregates in [start, end) per member, as
// eachBucket reads them.
func loadBuckets(r pebble.Reader, b *board, w *window, mem []*bucket, start, end int64) (map[string]laurel.Agg, error) {
	out := make(map[string]laurel.Agg)
	err := eachBucket(r, b, w, mem, start, end, func(_ int64, member string, a aggregate) error {
		c, err := laurel.Merge(b.cfg.Mode, b.cfg.Ordering(), out[member], toAgg(a, true))
		if err == nil {
			out[member] = c
		}
		return nil
	})
	return out, err
}

// eachBucket calls fn with every member's aggregate in w's buckets in [start, end): from
// mem for the buckets it holds (memory holds the newest bucket whole, with aggregates the
// store may not hold yet: checkpoint.go), and from r for the others.
func eachBucket(r pebble.Reader, b *board, w *window, mem []*bucket, start, end int64, fn func(bs int64, member string, a aggregate) error) error {
	id := b.cfg.ID
	p := prefix(tagAgg, id, w.name)
	err := scan(r, spanPrefix(tagAgg, id, w.name, start), spanPrefix(tagAgg, id, w.name, end), func(k, v []byte) error {
		bs := readTime(k[len(p):])
		if slices.ContainsFunc(mem, func(bk *bucket) bool { return bk.start == bs }) {
			return nil
		}
		a, err := decodeAgg(v)
		if err != nil {
			return err
		}
		return fn(bs, string(k[len(p)+8:]), a)
	})
	for _, bk := range mem {
		if bk.start < start || bk.start >= end {
			continue
		}
		bk.slots.each(func(h uint32, v slot) {
			if err == nil {
				err = fn(bk.start, b.members.name(h), aggregate(v))
			}
		})
	}
	return err
}

// buildSpan makes a span holding aggs, building its tree in one pass from sorted keys. It
// interns members, so it runs where the board may change: under the write lock, or before
// the store serves.
func buildSpan(e *Store, b *board, start, end int64, aggs map[string]laurel.Agg) *span {
	sp := &span{start: start, end: end}
	keys := make([]rank.Key, 0, len(aggs))
	for member, a := range aggs {
		if !a.Present() {
			continue
		}
		h := b.members.intern(member)
		v := slot(fromAgg(a))
		sp.slots.set(h, v, b.members.count())
		if !e.hidden[member] {
			keys = append(keys, treeKey(h, v))
		}
	}
	sp.tree = loadTree(b, sp, keys, nil)
	return sp
}

// loadTree builds the tree of sp from keys, which it sorts (through scratch: sortKeys); sp
// holds their aggregates.
func loadTree(b *board, sp *span, keys []rank.Key, scratch *[]rank.Key) *rank.Tree {
	sortKeys(b, keys, scratch)
	t, err := rank.Load(b.treeOptions(sp), keys)
	if err != nil {
		panic("embedded: " + err.Error())
	}
	return t
}
