package embedded

import (
	"context"
	"slices"
	"time"

	"github.com/laurel/laurel"
)

// PutBoard creates a board or updates its configuration. A window added to an existing board
// is computed from the board's retained events, its past periods included.
func (s *Store) PutBoard(ctx context.Context, id string, spec laurel.BoardSpec) (laurel.BoardInfo, bool, error) {
	if err := laurel.ValidateBoardID(id); err != nil {
		return laurel.BoardInfo{}, false, err
	}
	var created bool
	err := s.do(ctx, &op{exclusive: true, run: func(tx *txn) error {
		cur := s.boards[id]
		var curCfg *laurel.Board
		if cur != nil {
			curCfg = &cur.cfg
		}
		cfg, err := spec.Apply(id, curCfg, tx.now)
		if err != nil {
			return err
		}
		tx.set(key(tagBoard, id), encodeBoard(&cfg))
		var rate *rateTimes
		if cur != nil {
			rate = cur.rate
		}
		rate, err = s.keepRate(rate, &cfg, tx.now)
		if err != nil {
			return err
		}
		if cur == nil {
			created = true
			b := newBoard(cfg)
			b.rate = rate
			for _, w := range b.windows {
				if initWindow(b, w, tx.now); w.w.IsRolling() {
					tx.bucketsFrom(id, w.name, w.open[0].start)
				}
			}
			tx.onCommit(b, func() { s.boards[id] = b })
			return nil
		}
		windows := make([]*window, len(cfg.Windows))
		for i, lw := range cfg.Windows {
			if w := cur.window(lw.String()); w != nil {
				windows[i] = w
				continue
			}
			w := cur.newWindow(lw)
			initWindow(cur, w, tx.now)
			tx.dropSpans(prefix(tagAgg, id, w.name)) // a window of that name before, if any
			if err := s.buildWindow(tx, cur, &cfg, w); err != nil {
				return err
			}
			windows[i] = w
		}
		// keep and late_limit decide which closed periods are kept, and until when; what
		// closed under the old late_limit stays closed.
		for _, w := range cur.windows {
			if !w.w.IsCalendar() {
				continue
			}
			m := w.marks
			if cfg.LateLimit != cur.cfg.LateLimit || cfg.Keep != cur.cfg.Keep {
				m = w.marks.After(&cur.cfg, w.w, tx.now)
				tx.set(key(tagWindow, id, w.name), appendTime(appendTime(nil, m.ClosedThrough), m.DroppedBefore))
				tx.onCommit(cur, func() { w.marks = m })
			}
			s.keepClosedWith(tx, cur, w, slices.Clone(w.closed), &cfg, m)
		}
		tx.onCommit(cur, func() { cur.cfg, cur.windows, cur.rate = cfg, windows, rate })
		return nil
	}})
	if err != nil {
		return laurel.BoardInfo{}, false, err
	}
	info, err := s.Board(ctx, id)
	return info, created, err
}

// initWindow gives a new all or rolling window its one in-memory span, empty.
func initWindow(b *board, w *window, now int64) {
	switch {
	case w.w.Kind == laurel.WindowAll:
		w.open = []*span{newSpan(b, 0, 0)}
	case w.w.IsRolling():
		s, en := b.cfg.Calendar().Span(w.w, time.UnixMilli(now))
		w.open = []*span{newSpan(b, s.UnixMilli(), en.UnixMilli())}
	}
}

// buildWindow computes a window added to an existing board from its retained events: the
// aggregates of its open periods and buckets, and its closed periods, frozen.
func (s *Store) buildWindow(tx *txn, b *board, cfg *laurel.Board, w *window) error {
	id := cfg.ID
	cal := cfg.Calendar()
	closing := make(map[int64][]entry)
	build := func(member string, events []storedEvent) error {
		if len(events) == 0 {
			return nil
		}
		var current laurel.Span
		if w.w.IsRolling() {
			current = w.open[0].Bounds()
		}
		aggs, err := laurel.BuildWindow(cfg, w.w, w.marks, current, counted(events), tx.now)
		if err != nil {
			return err
		}
		handle := func() uint32 { h, _ := tx.handle(b, member, true); return h }
		for _, a := range aggs {
			switch {
			case a.Closed:
				closing[a.Start] = append(closing[a.Start], entry{member, fromAgg(a.Agg)})
			case a.Current:
				tx.memSet(b, w, member, slot(fromAgg(a.Agg)), true)
			case w.w.IsRolling():
				tx.bucketSet(b, w, a.Start, handle(), member, fromAgg(a.Agg), true)
			default:
				tx.entrySet(b, w, a.Start, a.End, handle(), member, a.Agg)
			}
		}
		return nil
	}
	if err := eachMemberEvents(s.db, s.recent, nil, id, false, build); err != nil {
		return err
	}
	if len(closing) > 0 {
		starts := make([]int64, 0, len(closing))
		for start := range closing {
			starts = append(starts, start)
		}
		slices.Sort(starts)
		var closed []*closedPeriod
		for _, start := range starts {
			p := cal.PeriodAt(w.w, time.UnixMilli(start))
			closed = slices.Insert(closed, 0, s.freeze(tx, b, w, start, p.End.UnixMilli(), closing[start]))
		}
		s.keepClosed(tx, b, w, closed, cfg)
	}
	return nil
}

// DeleteBoard erases a board and everything of it.
func (s *Store) DeleteBoard(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	return s.do(ctx, &op{exclusive: true, seals: true, run: func(tx *txn) error {
		if s.boards[id] == nil {
			return laurel.ErrNoBoard(id)
		}
		// The sealed events, found through the member index, then every table by the
		// board's prefix; the events since the last seal are left out of the seal that
		// commits this.
		var seqs []uint64
		err := scanPrefix(s.db, prefix(tagEvents, id), func(k, v []byte) (err error) {
			seqs, err = indexedSeqs(seqs[:0], k, v)
			for _, seq := range seqs {
				tx.delSealed(seq, id)
			}
			return err
		})
		if err != nil {
			return err
		}
		tx.erase = &erasure{boards: map[string]bool{id: true}}
		tx.dropSpans(prefix(tagAgg, id))
		tx.delBoardIDs(id)
		for _, tag := range boardTags {
			if tag == tagBoard {
				tx.del(key(tagBoard, id))
				continue
			}
			p := prefix(tag, id)
			tx.delRange(p, upper(p))
		}
		tx.onCommit(nil, func() { delete(s.boards, id) })
		return nil
	}})
}

// Board returns a board's configuration and, per window, its current period and total.
func (s *Store) Board(ctx context.Context, id string) (laurel.BoardInfo, error) {
	if err := laurel.ValidateBoardID(id); err != nil {
		return laurel.BoardInfo{}, err
	}
	now := s.now()
	s.mu.RLock()
	b := s.boards[id]
	s.mu.RUnlock()
	if b == nil {
		return laurel.BoardInfo{}, laurel.ErrNoBoard(id)
	}
	if err := s.catchUp(ctx, b, now); err != nil {
		return laurel.BoardInfo{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.boards[id] != b {
		return laurel.BoardInfo{}, laurel.ErrNoBoard(id)
	}
	return s.boardInfo(b, now), nil
}

func (s *Store) boardInfo(b *board, now int64) laurel.BoardInfo {
	info := laurel.BoardInfo{Board: b.cfg, Current: make(map[string]laurel.PeriodInfo, len(b.windows))}
	info.Board.Windows = slices.Clone(b.cfg.Windows)
	for _, w := range b.windows {
		p := s.periodAt(b, w, now)
		if sp := s.currentSpan(b, w, now); sp != nil {
			p.Total = sp.tree.Len()
		}
		info.Current[w.name] = p
	}
	return info
}

// periodAt describes the span of w that a read at t sees.
func (s *Store) periodAt(b *board, w *window, t int64) laurel.PeriodInfo {
	return b.cfg.CurrentPeriod(w.w, t)
}

// Boards lists every board, sorted by id.
func (s *Store) Boards(ctx context.Context) ([]laurel.BoardInfo, error) {
	s.mu.RLock()
	ids := make([]string, 0, len(s.boards))
	for id := range s.boards {
		ids = append(ids, id)
	}
	s.mu.RUnlock()
	slices.Sort(ids)
	return laurel.BoardsOf(ctx, ids, s.Board)
}
