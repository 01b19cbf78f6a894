package embedded

import (
	"time"

	"github.com/laurel/laurel"
)

// recover rebuilds memory from the store: boards, hidden members, and per window its open
// spans (from the stored aggregates) and closed periods. Nothing is served before it ends.
func (e *Engine) recover() error {
	if v, ok, err := get(e.db, []byte{tagSeq}); err != nil {
		return err
	} else if ok {
		e.seq = readU64(v)
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
		for _, w := range b.windows {
			if err := e.recoverWindow(b, w, now); err != nil {
				return err
			}
		}
		b.updateDeadline()
		e.boards[cfg.ID] = b
	}
	return nil
}

func (e *Engine) recoverWindow(b *board, w *window, now int64) error {
	id := b.cfg.ID
	if v, ok, err := get(e.db, key(tagWindow, id, w.name)); err != nil {
		return err
	} else if ok && len(v) == 16 {
		w.closedThrough, w.droppedBefore = readTime(v), readTime(v[8:])
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
	w.dropAt = dropTime(&b.cfg, w.w, w.closed)

	if w.w.IsRolling() {
		s, en := b.cfg.Calendar().Span(w.w, time.UnixMilli(now))
		aggs, err := loadBuckets(e.db, b, w, s.UnixMilli(), en.UnixMilli())
		if err != nil {
			return err
		}
		w.open = []*span{buildSpan(e, b, s.UnixMilli(), en.UnixMilli(), aggs)}
		return nil
	}
	if w.w.Kind == laurel.WindowAll {
		initWindow(b, w, now)
	}
	// The aggregates of open periods, one period after another.
	ap := prefix(tagAgg, id, w.name)
	start := int64(noTime)
	aggs := make(map[string]laurel.Agg)
	done := func() {
		if start == noTime {
			return
		}
		end := int64(0)
		if w.w.IsCalendar() {
			end = b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(start)).End.UnixMilli()
		}
		sp := buildSpan(e, b, start, end, aggs)
		if w.w.IsCalendar() {
			w.open = append(w.open, sp)
		} else {
			w.open = []*span{sp}
		}
		aggs = make(map[string]laurel.Agg)
	}
	err := scanPrefix(e.db, ap, func(k, v []byte) error {
		s := readTime(k[len(ap):])
		if s != start {
			done()
			start = s
		}
		a, err := decodeAgg(v)
		if err != nil {
			return err
		}
		aggs[string(k[len(ap)+8:])] = toAgg(a, true)
		return nil
	})
	if err != nil {
		return err
	}
	done()
	return nil
}
