package postgres

import (
	"context"
	"fmt"
	"maps"
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
	// The board as it is, read first: the answer after the write needs the index, and a
	// store whose index does not answer now refuses the write rather than store it and then
	// fail to answer. Should the index fail in between, the answer is made of this read.
	before, err := s.Board(ctx, id)
	if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
		return laurel.BoardInfo{}, false, err
	}
	var committed *state
	var last *step // the try that committed
	created := false
	err = s.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, w *step) error {
		b := w.boards[id]
		defer func() { committed, last = b.st, w }()
		if b.st == nil {
			cfg, err := spec.Apply(id, nil, w.now)
			if err != nil {
				return err
			}
			created = true
			b.st, b.stateChanged = newState(cfg, s.opts.Shards, w.now), true
			b.makeShards()
			return nil
		}
		if err := w.advance(ctx, b); err != nil {
			return err
		}
		old := b.st.cfg
		cfg, err := spec.Apply(id, &old, w.now)
		if err != nil {
			return err
		}
		// What closed or was dropped under the old late_limit and keep stays so.
		if cfg.LateLimit != old.LateLimit || cfg.Keep != old.Keep {
			for i := range b.st.Windows {
				if ws := &b.st.Windows[i]; ws.w.IsCalendar() {
					ws.Marks = ws.Marks.After(&old, ws.w, w.now)
				}
			}
		}
		b.st.setConfig(cfg)
		windows := make([]windowState, 0, len(cfg.Windows))
		var added []string
		for _, win := range cfg.Windows {
			if ws := b.st.window(win.String()); ws != nil {
				windows = append(windows, *ws)
				continue
			}
			windows = append(windows, newWindowState(&cfg, win, w.now))
			added = append(added, win.String())
		}
		b.st.Windows = windows
		for i := range b.st.Windows {
			ws := &b.st.Windows[i]
			if slices.Contains(added, ws.Name) {
				if err := w.buildWindow(ctx, b, ws); err != nil {
					return err
				}
			} else if ws.w.IsCalendar() {
				if err := w.keepClosed(ctx, b, ws, ws.Marks); err != nil {
					return err
				}
			}
		}
		b.stateChanged = true
		return nil
	})
	if err != nil {
		return laurel.BoardInfo{}, false, err
	}
	info, err := s.Board(ctx, id)
	if err == nil {
		return info, created, nil
	}
	// Stored: answered so if the answer can be made without the index. A new board holds no
	// one; a changed one holds whom it held in the periods it had, and a window it gained
	// those of its members the step found, hidden ones left out. A period that began since
	// the first read, or since the step, is not known without the index.
	now := s.now()
	info = committed.info(now)
	stepped := committed.info(last.now).Current // the periods the step built a window gained for
	for name, p := range info.Current {
		old, ok := before.Current[name]
		switch {
		case created:
		case ok && old.ID == p.ID && old.Start == p.Start:
			p.Total = old.Total
		case !ok && stepped[name].ID == p.ID:
			p.Total = last.totalOf(id, name)
		default:
			return laurel.BoardInfo{}, false, err
		}
		info.Current[name] = p
	}
	s.log.Warn("a board was written, but could not be read back; answering from what was read before", "board", id, "err", err)
	return info, created, nil
}

// totalOf counts the members of a window's current period as the step left it: those with
// an aggregate there, less the hidden. It is the index's total when the step built the window.
func (s *step) totalOf(board, window string) int {
	b := s.boards[board]
	span := b.currentSpanOf(b.st.window(window), s.now)
	n := 0
	for k, v := range b.aggs {
		if k.win == window && k.span == span && v.present && !s.hidden[k.member] {
			n++
		}
	}
	return n
}

// buildWindow computes a window added to an existing board from its retained events: the
// aggregates of its open periods and buckets, and its closed periods, frozen.
func (s *step) buildWindow(ctx context.Context, b *boardStep, ws *windowState) error {
	cfg := &b.st.cfg
	cal := cfg.Calendar()
	rows, err := s.tx.Query(ctx, "SELECT seq, member, value, coalesce(sub, 0), ts FROM laurel_events WHERE board = $1 AND NOT retracted ORDER BY member, seq", b.id)
	if err != nil {
		return fmt.Errorf("postgres: read events: %w", err)
	}
	var all []storedEvent
	for rows.Next() {
		var ev storedEvent
		if err := rows.Scan(&ev.seq, &ev.member, &ev.value, &ev.sub, &ev.ts); err != nil {
			rows.Close()
			return err
		}
		all = append(all, ev)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	closing := make(map[int64][]laurel.Entry)
	for len(all) > 0 {
		n := 1
		for n < len(all) && all[n].member == all[0].member {
			n++
		}
		events, member := all[:n], all[0].member
		all = all[n:]
		var current laurel.Span
		if ws.w.IsRolling() {
			current = ws.Open[0]
		}
		aggs, err := laurel.BuildWindow(cfg, ws.w, ws.Marks, current, counted(events), s.now)
		if err != nil {
			return err
		}
		for _, a := range aggs {
			switch {
			case a.Closed:
				closing[a.Start] = append(closing[a.Start], laurel.Entry{Member: member, Score: a.Agg.Score, Sub: a.Agg.Sub, ReachedAt: a.Agg.At})
			case a.Current:
				b.set(aggKey{ws.Name, currentSpan, member}, valOf(a.Agg))
			default:
				if ws.w.IsCalendar() {
					ws.addOpen(a.Start, a.End)
				}
				b.set(aggKey{ws.Name, a.Start, member}, valOf(a.Agg))
			}
		}
	}
	for _, start := range slices.Sorted(maps.Keys(closing)) {
		p := cal.PeriodAt(ws.w, time.UnixMilli(start))
		cp, err := s.freezeEntries(ctx, b, ws, p, closing[start])
		if err != nil {
			return err
		}
		ws.Closed = slices.Insert(ws.Closed, 0, cp)
	}
	if len(closing) > 0 {
		return s.keepClosed(ctx, b, ws, ws.Marks)
	}
	return nil
}

// freezeEntries writes a closed period from its entries: a window added after the period
// closed.
func (s *step) freezeEntries(ctx context.Context, b *boardStep, ws *windowState, p laurel.Period, entries []laurel.Entry) (closedPeriod, error) {
	start := p.Start.UnixMilli()
	ranked := laurel.NewSortedRanking(b.st.cfg.Ordering(), entries)
	entries, _ = ranked.Page(ctx, 1, len(entries))
	var ranks []int32
	var members []string
	var scores, subs, ats []int64 // subs: NULL on a board without a subscore
	hasSub := b.st.cfg.Subscore != nil
	for _, en := range entries {
		ranks, members, scores, ats = append(ranks, int32(en.Rank)), append(members, en.Member), append(scores, en.Score), append(ats, en.ReachedAt)
		if hasSub {
			subs = append(subs, en.Sub)
		}
	}
	_, err := s.tx.Exec(ctx, `INSERT INTO laurel_frozen (board, win, span, rank, member, score, sub, at)
		SELECT $1, $2, $3, k.rank, k.member, k.score, k.sub, k.at FROM unnest($4::int[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[]) AS k(rank, member, score, sub, at)`,
		b.id, ws.Name, start, ranks, members, scores, subs, ats)
	if err == nil {
		_, err = s.tx.Exec(ctx, "INSERT INTO laurel_closed (board, win, span, total) VALUES ($1, $2, $3, $4)", b.id, ws.Name, start, len(entries))
	}
	if err != nil {
		return closedPeriod{}, fmt.Errorf("postgres: freeze %s %s: %w", ws.Name, p.ID, err)
	}
	return closedPeriod{ID: p.ID, Start: start, End: p.End.UnixMilli(), Total: len(entries)}, nil
}

// boardTables are the tables that hold a board's rows.
var boardTables = []string{"laurel_events", "laurel_aggs", "laurel_members", "laurel_closed", "laurel_frozen", "laurel_history", "laurel_shards", "laurel_boards"}

// DeleteBoard erases a board and everything of it.
func (s *Store) DeleteBoard(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	return s.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, w *step) error {
		b, err := w.board(id)
		if err != nil {
			return err
		}
		// The index goes first: a read that finds no state asks the store, which answers
		// once this step is done, so no read serves the board from the index after it.
		if err := s.index.DeleteBoard(ctx, id); err != nil {
			return err
		}
		for _, table := range boardTables {
			col := "board"
			if table == "laurel_boards" {
				col = "id"
			}
			if _, err := w.tx.Exec(ctx, "DELETE FROM "+table+" WHERE "+col+" = $1", id); err != nil {
				return fmt.Errorf("postgres: delete board: %w", err)
			}
		}
		// Its streams, on every node, hear of it and end (the index's delete tells no one).
		b.deleted, w.global, w.moved = true, true, true
		return nil
	})
}
