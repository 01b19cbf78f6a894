package embedded

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// recover rebuilds memory from the store: boards, hidden members, and per window its open
// spans (from the stored aggregates) and closed periods. Nothing is served before it ends.
func (s *Store) recover() error {
	if _, ok, err := get(s.db, []byte{tagImport}); err != nil {
		return err
	} else if ok {
		return errUnfinishedImport
	}
	if err := refuseEarlierVersion(s.db); err != nil {
		return err
	}
	records, err := s.readLog()
	if err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	if v, ok, err := get(s.db, []byte{tagSeq}); err != nil {
		return err
	} else if ok {
		s.seq = readU64(v)
	}
	// Aggregates that count events from where replay starts are noted, so that replay
	// adds to each only what it does not count yet.
	asOf := make(map[string]uint64)
	if v, ok, err := get(s.db, []byte{tagReplay}); err != nil {
		return err
	} else if ok {
		s.cp.replayFrom = readU64(v)
	}
	bucketsAsOf := uint64(math.MaxUint64)
	if v, ok, err := get(s.db, []byte{tagBucketsAsOf}); err != nil {
		return err
	} else if ok {
		bucketsAsOf = readU64(v)
	}
	if err := scanPrefix(s.db, []byte{tagHidden}, func(k, _ []byte) error {
		s.hidden[string(k[1:])] = true
		return nil
	}); err != nil {
		return err
	}
	var cfgs []laurel.Board
	if err := scanPrefix(s.db, []byte{tagBoard}, func(k, v []byte) error {
		cfg, err := decodeBoard(string(k[1:]), v)
		if err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
		return nil
	}); err != nil {
		return err
	}
	now := s.now()
	legacy := false // aggregates of open periods or all in the store (earlier versions, imports)
	for _, cfg := range cfgs {
		b := newBoard(cfg)
		if err := s.recoverTagged(b); err != nil {
			return err
		}
		stored, err := s.recoverWindows(b, now, asOf, nil, false)
		if err != nil {
			return err
		}
		legacy = legacy || stored
		s.boards[cfg.ID] = b
	}
	files, err := s.recoverCheckpoints(asOf)
	if err != nil {
		return fmt.Errorf("reading the checkpoint file: %w", err)
	}
	// Rolling windows last: from the buckets the checkpoint file holds, or else from the
	// store's, whose members are then nearly all interned, found in member order
	// (windowScan.handle).
	for _, b := range s.boards {
		if _, err := s.recoverWindows(b, now, asOf, files, true); err != nil {
			return err
		}
	}
	if err := s.recoverRecent(records); err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	if s.sealedTo, err = s.sealedThrough(); err != nil {
		return err
	}
	if err := s.loadIDRuns(); err != nil {
		return fmt.Errorf("listing the runs of ids: %w", err)
	}
	n, err := s.replay(s.cp.replayFrom, asOf, bucketsAsOf, legacy)
	if err != nil {
		return fmt.Errorf("replaying the log: %w", err)
	}
	// What Open read and sorted through is garbage once the trees are built, as large as the
	// index: a large one's pages are handed back, so that a restarted store is as resident as
	// one that grew to the same size (a small one's are not worth a forced collection).
	for _, b := range s.boards {
		b.members.index() // before readers, who only read the table
	}
	if s.buildTrees() >= 1<<20 {
		debug.FreeOSMemory()
	}
	if n > 0 {
		s.log.Info("replayed the events whose aggregates were not stored yet", "events", n)
	}
	for _, b := range s.boards {
		b.updateDeadline()
	}
	return nil
}

// recoverWindows recovers a board's windows: the first (all, if the board has it) alone,
// interning its members, then the others side by side, one a core, each finding its members
// among those and noting the few it does not find, which are interned once they are done.
// Scanning the stored aggregates is most of an open, and nothing else runs meanwhile. It
// recovers every window but the rolling windows' spans, or (rolling set) those alone, and
// reports whether the store held aggregates of open periods or all. files holds the rolling
// windows' buckets that the checkpoint file holds.
func (s *Store) recoverWindows(b *board, now int64, asOf map[string]uint64, files map[*window]*fileBuckets, rolling bool) (stored bool, err error) {
	windows := b.windows
	if rolling {
		windows = slices.DeleteFunc(slices.Clone(windows), func(w *window) bool { return !w.w.IsRolling() })
	}
	if len(windows) == 0 {
		return false, nil
	}
	first := max(slices.IndexFunc(windows, func(w *window) bool { return w.w.Kind == laurel.WindowAll }), 0)
	sc := &windowScan{intern: true, rolling: rolling, files: files, asOf: asOf}
	if err := s.recoverWindow(b, windows[first], now, sc); err != nil {
		return false, err
	}
	stored = sc.stored
	rest := slices.Delete(slices.Clone(windows), first, first+1)
	var scans []*windowScan
	onCores(len(rest), func() func(int) {
		sc := &windowScan{rolling: rolling, files: files, asOf: make(map[string]uint64)}
		scans = append(scans, sc)
		return func(i int) {
			if sc.err == nil {
				sc.err = s.recoverWindow(b, rest[i], now, sc)
			}
		}
	})
	for _, sc := range scans {
		if sc.err != nil {
			return false, sc.err
		}
		stored = stored || sc.stored
		maps.Copy(asOf, sc.asOf)
		for _, m := range sc.missed {
			m.sp.slots.set(b.members.intern(m.member), m.v, b.members.count())
		}
	}
	return stored, nil
}

// windowScan is what the recovery of windows carries from one window to the next.
type windowScan struct {
	intern   bool                     // intern the members read; else find them, noting in missed those not yet interned
	rolling  bool                     // recover rolling windows' spans alone (recoverWindows)
	files    map[*window]*fileBuckets // the rolling windows' buckets the checkpoint file holds
	asOf     map[string]uint64        // the aggregates that count events from where replay starts (recover)
	gathered []handleSlot             // a span's entries, read before they are set (slots.load)
	missed   []missedEntry
	stored   bool // it read aggregates of open periods or all
	err      error
}

// missedEntry is an aggregate whose member a window recovered alongside others did not find
// interned (recoverWindows).
type missedEntry struct {
	sp     *span
	member string
	v      slot
}

// handle returns member's handle in b, ok false when the scan only finds members and b has
// not interned it yet. hint is its handle when members come in the order they were interned.
func (sc *windowScan) handle(b *board, member string, hint uint32) (h uint32, ok bool) {
	if sc.intern {
		return b.members.internAt(member, hint), true
	}
	return b.members.lookupAt(member, hint)
}

// onCores calls work(i) for each i below n, on up to one goroutine a core, and returns when
// all are done. Each goroutine takes its work function from newWorker, called in turn on the
// caller's goroutine before any runs, so that it can keep state of its own between items.
func onCores(n int, newWorker func() func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		work := newWorker()
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				work(i)
			}
		})
	}
	wg.Wait()
}

// recoverWindow recovers one window of b, through sc.
func (s *Store) recoverWindow(b *board, w *window, now int64, sc *windowScan) error {
	if sc.rolling {
		start, end := b.cfg.Calendar().Span(w.w, time.UnixMilli(now))
		if fb := sc.files[w]; fb != nil && fb.from <= start.UnixMilli() {
			w.open = []*span{fb.span(b, start.UnixMilli(), end.UnixMilli())}
			s.bucketsFromFile.Add(1)
			return nil
		}
		sp, err := s.recoverRolling(b, w, start.UnixMilli(), end.UnixMilli(), sc)
		w.open = []*span{sp}
		return err
	}
	id := b.cfg.ID
	if v, ok, err := get(s.db, key(tagWindow, id, w.name)); err != nil {
		return err
	} else if ok && len(v) == 16 {
		w.marks.ClosedThrough, w.marks.DroppedBefore = readTime(v), readTime(v[8:])
	}
	cp := prefix(tagClosed, id, w.name)
	if err := scanPrefix(s.db, cp, func(k, v []byte) error {
		c, err := decodeClosed(readTime(k[len(cp):]), v)
		if err != nil {
			return err
		}
		w.closed = append([]*closedPeriod{c}, w.closed...) // the scan is oldest first
		return nil
	}); err != nil {
		return err
	}
	for member := range s.hidden {
		for _, c := range w.closed {
			r, ok, err := frozenRankOf(s.db, id, w.name, c.start, member)
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
		return nil // its span once the checkpoint file has interned the members (recover)
	}
	if w.w.Kind == laurel.WindowAll {
		initWindow(b, w, now)
	}
	// The aggregates of open periods, one period after another, each in member order. Their
	// trees are built once replay has added what they lack (buildTrees). A span's entries
	// are gathered first, so that its slots are laid out once for all of them (slots.load).
	ap := prefix(tagAgg, id, w.name)
	var sp *span
	var hint uint32
	fill := func() {
		if sp != nil {
			sp.slots.load(sc.gathered, b.members.count())
		}
		sc.gathered = sc.gathered[:0]
	}
	err := scanPrefix(s.db, ap, func(k, v []byte) error {
		if start := readTime(k[len(ap):]); sp == nil || start != sp.start {
			fill()
			end := int64(0)
			if w.w.IsCalendar() {
				end = b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(start)).End.UnixMilli()
			}
			sp = &span{start: start, end: end}
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
		sc.stored = true
		if seq > 0 && seq >= s.cp.replayFrom {
			sc.asOf[string(k)] = seq
		}
		// The id is valid only during the call: intern copies it into its arena.
		member := unsafe.String(&k[len(ap)+8], len(k)-len(ap)-8)
		h, ok := sc.handle(b, member, hint)
		if !ok {
			sc.missed = append(sc.missed, missedEntry{sp, strings.Clone(member), slot(a)})
			return nil
		}
		hint = h + 1
		sc.gathered = append(sc.gathered, handleSlot{h, slot(a)})
		return nil
	})
	fill()
	return err
}

// recoverRolling builds a rolling window's current span from its stored buckets, merging
// them per member in a slice indexed by handle: each bucket is scanned in member order. Its
// tree is built once replay has added what the span lacks (buildTrees).
func (s *Store) recoverRolling(b *board, w *window, start, end int64, sc *windowScan) (*span, error) {
	id := b.cfg.ID
	p := prefix(tagAgg, id, w.name)
	aggs := make([]laurel.Agg, b.members.count())
	var others map[string]laurel.Agg // of members not interned yet (windowScan.missed)
	bucket := int64(noTime)
	var hint uint32
	err := scan(s.db, spanPrefix(tagAgg, id, w.name, start), spanPrefix(tagAgg, id, w.name, end), func(k, v []byte) error {
		if bs := readTime(k[len(p):]); bs != bucket {
			bucket, hint = bs, 0
		}
		a, err := decodeAgg(v)
		if err != nil {
			return err
		}
		member := unsafe.String(&k[len(p)+8], len(k)-len(p)-8)
		h, ok := sc.handle(b, member, hint)
		if !ok {
			if others == nil {
				others = make(map[string]laurel.Agg)
			}
			if c, err := laurel.Merge(b.cfg.Mode, b.cfg.Ordering(), others[member], toAgg(a, true)); err == nil {
				others[strings.Clone(member)] = c
			}
			return nil
		}
		hint = h + 1
		for int(h) >= len(aggs) {
			aggs = append(aggs, laurel.Agg{})
		}
		c, err := laurel.Merge(b.cfg.Mode, b.cfg.Ordering(), aggs[h], toAgg(a, true))
		if err == nil {
			aggs[h] = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sp := &span{start: start, end: end}
	// Laid out once for all, set from aggs directly: gathering them first grew a copy of
	// millions by doubling (13% of an open's CPU at 2.5M members).
	n := 0
	for _, a := range aggs {
		if a.Present() {
			n++
		}
	}
	sp.slots.layOut(n, b.members.count())
	for h, a := range aggs {
		if a.Present() {
			sp.slots.set(uint32(h), slot(fromAgg(a)), b.members.count())
		}
	}
	for member, a := range others {
		sc.missed = append(sc.missed, missedEntry{sp, member, slot(fromAgg(a))})
	}
	return sp, nil
}

// buildTrees builds the tree of each span recovered without one, from its slots: hidden
// members have aggregates but no place in trees. Spans are built side by side, one a core:
// sorting their keys is most of it, and nothing else runs while Open recovers. It returns the
// entries it built trees of.
func (s *Store) buildTrees() (entries int) {
	type spanOf struct {
		b  *board
		sp *span
	}
	var todo []spanOf
	for _, b := range s.boards {
		for _, w := range b.windows {
			for _, sp := range w.open {
				if sp.tree == nil {
					todo = append(todo, spanOf{b, sp})
					entries += sp.slots.n
				}
			}
		}
	}
	onCores(len(todo), func() func(int) {
		// Kept from one span to the next, each as large as the most keys, and faulted in huge
		// pages (growHuge): at 25M entries a span, 1.2 GB a core.
		var keys, scratch []rank.Key    // the sort's keys and its second array
		var flat, flatScratch []flatKey // the same, of boards without a subscore: 24 bytes a key, not 32
		return func(i int) {
			b, sp := todo[i].b, todo[i].sp
			if b.cfg.Subscore == nil {
				flat, flatScratch = growHuge(flat[:0], sp.slots.n), growHuge(flatScratch[:0], sp.slots.n)
				sp.slots.each(func(h uint32, v slot) {
					if len(s.hidden) == 0 || !s.hidden[b.members.name(h)] {
						flat = append(flat, flatKey{v.score, v.at, h})
					}
				})
				sp.tree = loadFlatTree(b, sp, flat, &flatScratch)
				return
			}
			keys, scratch = growHuge(keys[:0], sp.slots.n), growHuge(scratch[:0], sp.slots.n)
			sp.slots.each(func(h uint32, v slot) {
				if len(s.hidden) == 0 || !s.hidden[b.members.name(h)] {
					keys = append(keys, treeKey(h, v))
				}
			})
			sp.tree = loadTree(b, sp, keys, &scratch)
		}
	})
	return entries
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
