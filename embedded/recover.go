package embedded

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// recover rebuilds memory from the store: boards, hidden members, and per window its open
// spans (from the stored aggregates) and closed periods. Nothing is served before it ends.
func (e *Store) recover() error {
	if _, ok, err := get(e.db, []byte{tagImport}); err != nil {
		return err
	} else if ok {
		return errUnfinishedImport
	}
	if err := refuseEarlierVersion(e.db); err != nil {
		return err
	}
	records, err := e.readLog()
	if err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	if v, ok, err := get(e.db, []byte{tagSeq}); err != nil {
		return err
	} else if ok {
		e.seq = readU64(v)
	}
	// Aggregates that count events from where replay starts are noted, so that replay
	// adds to each only what it does not count yet.
	asOf := make(map[string]uint64)
	if v, ok, err := get(e.db, []byte{tagReplay}); err != nil {
		return err
	} else if ok {
		e.cp.replayFrom = readU64(v)
	}
	bucketsAsOf := uint64(math.MaxUint64)
	if v, ok, err := get(e.db, []byte{tagBucketsAsOf}); err != nil {
		return err
	} else if ok {
		bucketsAsOf = readU64(v)
	}
	if err := scanPrefix(e.db, []byte{tagHidden}, func(k, _ []byte) error {
		e.hidden[string(k[1:])] = true
		return nil
	}); err != nil {
		return err
	}
	var cfgs []laurel.Board
	if err := scanPrefix(e.db, []byte{tagBoard}, func(k, v []byte) error {
		cfg, err := decodeBoard(string(k[1:]), v)
		if err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
		return nil
	}); err != nil {
		return err
	}
	now := e.now()
	for _, cfg := range cfgs {
		b := newBoard(cfg)
		if err := e.recoverWindows(b, now, asOf); err != nil {
			return err
		}
		e.boards[cfg.ID] = b
	}
	if err := e.recoverRecent(records); err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	if e.sealedTo, err = e.sealedThrough(); err != nil {
		return err
	}
	n, err := e.replay(e.cp.replayFrom, asOf, bucketsAsOf)
	if err != nil {
		return fmt.Errorf("replaying the log: %w", err)
	}
	e.buildTrees()
	if n > 0 {
		e.log.Info("replayed the events whose aggregates were not stored yet", "events", n)
	}
	for _, b := range e.boards {
		b.updateDeadline()
	}
	return nil
}

// recoverWindows recovers a board's windows: the first (all, if the board has it) alone,
// interning its members, then the others side by side, one a core, each finding its members
// among those and noting the few it does not find, which are interned once they are done.
// Scanning the stored aggregates is most of an open, and nothing else runs meanwhile.
func (e *Store) recoverWindows(b *board, now int64, asOf map[string]uint64) error {
	if len(b.windows) == 0 {
		return nil
	}
	first := max(slices.IndexFunc(b.windows, func(w *window) bool { return w.w.Kind == laurel.WindowAll }), 0)
	var gathered []handleSlot
	if err := e.recoverWindow(b, b.windows[first], now, asOf, &gathered, nil); err != nil {
		return err
	}
	type result struct {
		asOf   map[string]uint64
		missed []missedEntry
		err    error
	}
	results := make([]result, len(b.windows))
	turns := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, w := range b.windows {
		if i == first {
			continue
		}
		r := &results[i]
		r.asOf = make(map[string]uint64)
		wg.Go(func() {
			turns <- struct{}{}
			defer func() { <-turns }()
			var gathered []handleSlot
			r.err = e.recoverWindow(b, w, now, r.asOf, &gathered, &r.missed)
		})
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		maps.Copy(asOf, r.asOf)
		for _, m := range r.missed {
			m.sp.slots.set(b.members.intern(m.member), m.v, b.members.count())
		}
	}
	return nil
}

// missedEntry is an aggregate whose member a window recovered alongside others did not find
// interned (recoverWindows).
type missedEntry struct {
	sp     *span
	member string
	v      slot
}

// recoverWindow recovers one window of b. With missed nil it interns the members it reads;
// else it only finds them, as other windows are recovered alongside, and adds those not
// interned yet to missed, for the caller to set once they are.
func (e *Store) recoverWindow(b *board, w *window, now int64, asOf map[string]uint64, gathered *[]handleSlot, missed *[]missedEntry) error {
	id := b.cfg.ID
	if v, ok, err := get(e.db, key(tagWindow, id, w.name)); err != nil {
		return err
	} else if ok && len(v) == 16 {
		w.marks.ClosedThrough, w.marks.DroppedBefore = readTime(v), readTime(v[8:])
	}
	cp := prefix(tagClosed, id, w.name)
	if err := scanPrefix(e.db, cp, func(k, v []byte) error {
		c, err := decodeClosed(readTime(k[len(cp):]), v)
		if err != nil {
			return err
		}
		w.closed = append([]*closedPeriod{c}, w.closed...) // the scan is oldest first
		return nil
	}); err != nil {
		return err
	}
	for member := range e.hidden {
		for _, c := range w.closed {
			r, ok, err := frozenRankOf(e.db, id, w.name, c.start, member)
			if err != nil {
				return err
			}
			if ok {
				c.hidden = insertSorted(c.hidden, r)
			}
		}
	}
	for _, c := range w.closed {
		c.updateExcluded()
	}
	w.dropAt = dropTime(&b.cfg, w.w, w.closed, w.marks)

	if w.w.IsRolling() {
		s, en := b.cfg.Calendar().Span(w.w, time.UnixMilli(now))
		sp, err := e.recoverRolling(b, w, s.UnixMilli(), en.UnixMilli(), missed)
		w.open = []*span{sp}
		return err
	}
	if w.w.Kind == laurel.WindowAll {
		initWindow(b, w, now)
	}
	// The aggregates of open periods, one period after another, each in member order. Their
	// trees are built once replay has added what they lack (buildTrees).
	// A span's entries are gathered first, so that its slots are laid out once for all of
	// them (slots.reserve).
	ap := prefix(tagAgg, id, w.name)
	var sp *span
	var hint uint32
	fill := func() {
		if sp != nil {
			sp.slots.reserve(len(*gathered), b.members.count())
			for _, g := range *gathered {
				sp.slots.set(g.h, g.v, b.members.count())
			}
		}
		*gathered = (*gathered)[:0]
	}
	err := scanPrefix(e.db, ap, func(k, v []byte) error {
		if s := readTime(k[len(ap):]); sp == nil || s != sp.start {
			fill()
			end := int64(0)
			if w.w.IsCalendar() {
				end = b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(s)).End.UnixMilli()
			}
			sp = &span{start: s, end: end}
			if w.w.IsCalendar() {
				w.open = append(w.open, sp)
			} else {
				w.open = []*span{sp}
			}
		}
		a, seq, err := decodeAggAsOf(v)
		if err != nil {
			return err
		}
		if seq > 0 && seq >= e.cp.replayFrom {
			asOf[string(k)] = seq
		}
		// The id is valid only during the call: intern copies it into its arena.
		member := unsafe.String(&k[len(ap)+8], len(k)-len(ap)-8)
		h, ok := handleOf(b, member, hint, missed == nil)
		if !ok {
			*missed = append(*missed, missedEntry{sp, strings.Clone(member), slot(a)})
			return nil
		}
		hint = h + 1
		*gathered = append(*gathered, handleSlot{h, slot(a)})
		return nil
	})
	fill()
	return err
}

// handleSlot is a member's aggregate in a span, as recovery reads it.
type handleSlot struct {
	h uint32
	v slot
}

// recoverRolling builds a rolling window's current span from its stored buckets, merging
// them per member in a slice indexed by handle: each bucket is scanned in member order. Its
// tree is built once replay has added what the span lacks (buildTrees).
func (e *Store) recoverRolling(b *board, w *window, start, end int64, missed *[]missedEntry) (*span, error) {
	id := b.cfg.ID
	p := prefix(tagAgg, id, w.name)
	aggs := make([]laurel.Agg, b.members.count())
	var others map[string]laurel.Agg // of members not interned yet, when missed is not nil
	bucket := int64(noTime)
	var hint uint32
	err := scan(e.db, spanPrefix(tagAgg, id, w.name, start), spanPrefix(tagAgg, id, w.name, end), func(k, v []byte) error {
		if bs := readTime(k[len(p):]); bs != bucket {
			bucket, hint = bs, 0
		}
		a, err := decodeAgg(v)
		if err != nil {
			return err
		}
		member := unsafe.String(&k[len(p)+8], len(k)-len(p)-8)
		h, ok := handleOf(b, member, hint, missed == nil)
		if !ok {
			if others == nil {
				others = make(map[string]laurel.Agg)
			}
			if c, err := laurel.Merge(b.cfg.Mode, b.cfg.Order, others[member], toAgg(a, true)); err == nil {
				others[strings.Clone(member)] = c
			}
			return nil
		}
		hint = h + 1
		for int(h) >= len(aggs) {
			aggs = append(aggs, laurel.Agg{})
		}
		c, err := laurel.Merge(b.cfg.Mode, b.cfg.Order, aggs[h], toAgg(a, true))
		if err == nil {
			aggs[h] = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sp := &span{start: start, end: end}
	sp.slots.reserve(countFunc(aggs, laurel.Agg.Present), b.members.count())
	for h, a := range aggs {
		if a.Present() {
			sp.slots.set(uint32(h), slot(fromAgg(a)), b.members.count())
		}
	}
	for member, a := range others {
		*missed = append(*missed, missedEntry{sp, member, slot(fromAgg(a))})
	}
	return sp, nil
}

// handleOf returns member's handle in b, interning it when intern is set; else it only finds
// it, ok false when it is not interned. hint is its handle when members come in the order
// they were interned.
func handleOf(b *board, member string, hint uint32, intern bool) (h uint32, ok bool) {
	if intern {
		return b.members.internAt(member, hint), true
	}
	if int(hint) < b.members.count() && b.members.name(hint) == member {
		return hint, true
	}
	return b.members.lookup(member)
}

// buildTrees builds the tree of each span recovered without one, from its slots: hidden
// members have aggregates but no place in trees. Spans are built side by side, one a core:
// sorting their keys is most of it, and nothing else runs while Open recovers.
func (e *Store) buildTrees() {
	type todo struct {
		b  *board
		sp *span
	}
	work := make(chan todo)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var keys []rank.Key
			for t := range work {
				keys = slices.Grow(keys[:0], t.sp.slots.n)
				t.sp.slots.each(func(h uint32, v slot) {
					if len(e.hidden) == 0 || !e.hidden[t.b.members.name(h)] {
						keys = append(keys, treeKey(h, v))
					}
				})
				t.sp.tree = loadTree(t.b, t.sp, keys)
			}
		})
	}
	for _, b := range e.boards {
		for _, w := range b.windows {
			for _, sp := range w.open {
				if sp.tree == nil {
					work <- todo{b, sp}
				}
			}
		}
	}
	close(work)
	wg.Wait()
}

// errEarlierVersion is Open's answer on a store whose events an earlier version keyed by
// member (before the log, eventlog.go).
var errEarlierVersion = errors.New("this store was written by an earlier version of laurel, which kept events by member: " +
	"export it with that version (laurel export) and import the dump into a new directory with this one (laurel import)")

// refuseEarlierVersion refuses a store that holds records only an earlier version wrote.
func refuseEarlierVersion(db *pebble.DB) error {
	for _, tag := range []byte{tagEventV1, tagHistoryV1, tagJournalV1, tagLog} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
		if err != nil {
			return err
		}
		found := it.First()
		if err := it.Close(); err != nil {
			return err
		}
		if found {
			return errEarlierVersion
		}
	}
	return nil
}

// countFunc returns how many elements of s satisfy f.
func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}
