package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// advance brings a board to the step's now, if its deadline has passed: calendar periods
// whose late_limit has passed since their end are frozen with their ranks (and the oldest
// dropped beyond keep), and rolling windows move to the span of now. That changes the
// board's state, which only a step holding the whole board may do.
func (s *step) advance(ctx context.Context, b *boardStep) error {
	if !b.st.due(s.now) {
		return nil
	}
	if !b.whole {
		return &needWhole{b.id}
	}
	for i := range b.st.Windows {
		ws := &b.st.Windows[i]
		switch {
		case ws.w.IsCalendar():
			n := laurel.Closing(&b.st.cfg, ws.Marks, ws.Open, s.now)
			if n == 0 {
				if laurel.Due(ws.DropAt, s.now) {
					if err := s.keepClosed(ctx, b, ws, ws.Marks); err != nil {
						return err
					}
				}
				continue
			}
			for _, sp := range ws.Open[:n] {
				cp, err := s.freeze(ctx, b, ws, sp)
				if err != nil {
					return err
				}
				ws.Closed = slices.Insert(ws.Closed, 0, cp)
				b.drops = append(b.drops, shardindex.Set{Window: ws.Name, Start: sp.Start})
			}
			ws.Open = slices.Clone(ws.Open[n:])
			if err := s.keepClosed(ctx, b, ws, ws.Marks); err != nil {
				return err
			}
		case ws.w.IsRolling():
			if err := s.roll(ctx, b, ws); err != nil {
				return err
			}
		}
	}
	b.stateChanged = true
	return nil
}

// freeze closes an open period: every entry is ranked once and for all, hidden members
// included (they are left out when read). The period's aggregates stay in their members'
// rows, where nothing reads them once the board's state has the period closed, until each
// member's next write drops its own (memberrows.go): removing them here would rewrite every
// member's row under the board's lock.
func (s *step) freeze(ctx context.Context, b *boardStep, ws *windowState, sp laurel.Span) (closedPeriod, error) {
	// Ranked as the board ranks (laurel.CompareEntries), by the node, which alone reads the
	// members' packed rows.
	cp := closedPeriod{ID: b.st.cfg.Calendar().PeriodAt(ws.w, time.UnixMilli(sp.Start)).ID, Start: sp.Start, End: sp.End}
	var entries []laurel.Entry
	err := eachElem(ctx, s.tx, b.st, ws.Name, false, func(k aggKey, v aggVal) error {
		if k.span == sp.Start {
			entries = append(entries, laurel.Entry{Member: k.member, Score: v.score, Sub: v.sub, ReachedAt: v.at})
		}
		return nil
	})
	if err != nil {
		return cp, fmt.Errorf("postgres: freeze %s %s: %w", ws.Name, cp.ID, err)
	}
	hasSub := b.st.cfg.Subscore != nil
	ranked, _ := laurel.NewSortedRanking(b.st.cfg.Ordering(), entries).Page(ctx, 1, len(entries))
	_, err = s.tx.CopyFrom(ctx, pgx.Identifier{"laurel_frozen"}, frozenCols, pgx.CopyFromSlice(len(ranked), func(i int) ([]any, error) {
		en := &ranked[i]
		var sub any // NULL on a board without a subscore (migrations/006_subscore.sql)
		if hasSub {
			sub = en.Sub
		}
		return []any{b.id, ws.Name, sp.Start, int32(en.Rank), en.Member, en.Score, en.ReachedAt, sub}, nil
	}))
	if err != nil {
		return cp, fmt.Errorf("postgres: freeze %s %s: %w", ws.Name, cp.ID, err)
	}
	cp.Total = len(ranked)
	_, err = s.tx.Exec(ctx, "INSERT INTO laurel_closed (board, win, span, total) VALUES ($1, $2, $3, $4)", b.id, ws.Name, sp.Start, cp.Total)
	if err != nil {
		return cp, fmt.Errorf("postgres: freeze %s %s: %w", ws.Name, cp.ID, err)
	}
	for k := range b.aggs { // the step's view of the period goes with it
		if k.win == ws.Name && k.span == sp.Start {
			delete(b.aggs, k)
			delete(b.dirty, k)
			delete(b.stored, k)
		}
	}
	return cp, nil
}

// keepClosed drops the closed periods of ws that are no longer kept under the board's
// configuration and marks m, and notes when the oldest kept one will be dropped.
func (s *step) keepClosed(ctx context.Context, b *boardStep, ws *windowState, m laurel.Marks) error {
	n, dropAt := laurel.Kept(&b.st.cfg, ws.w, m, ws.Closed, s.now)
	if n < len(ws.Closed) {
		var starts []int64
		for _, cp := range ws.Closed[n:] {
			starts = append(starts, cp.Start)
		}
		for _, table := range []string{"laurel_frozen", "laurel_closed"} {
			if _, err := s.tx.Exec(ctx, "DELETE FROM "+table+" WHERE board = $1 AND win = $2 AND span = ANY($3)", b.id, ws.Name, starts); err != nil {
				return fmt.Errorf("postgres: drop closed periods: %w", err)
			}
		}
		ws.Closed = slices.Clone(ws.Closed[:n])
	}
	ws.DropAt = dropAt
	b.stateChanged = true
	return nil
}

// roll moves a rolling window to the span of the step's now. The members whose aggregate
// over the span can change are those with events in the buckets that leave or enter (events
// may be up to five minutes ahead of the clock); each is recomputed from its buckets in the
// new span. A jump past the whole span recomputes every member.
func (s *step) roll(ctx context.Context, b *boardStep, ws *windowState) error {
	r, ok := b.st.cfg.RollTo(ws.w, ws.Open[0], s.now)
	if !ok {
		return nil
	}
	ws.Open[0] = r.To
	if r.Whole {
		// Nothing of the old span remains: every member of it leaves, and the new span is
		// computed whole.
		var gone []aggKey
		err := eachElem(ctx, s.tx, b.st, ws.Name, false, func(k aggKey, _ aggVal) error {
			gone = append(gone, k) // the current span's, the one a rolling window's row holds
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres: roll %s: %w", ws.Name, err)
		}
		for _, k := range gone {
			b.set(k, aggVal{})
		}
		return s.recomputeRolling(ctx, b, ws, nil)
	}
	members, err := s.members(ctx, `SELECT DISTINCT member FROM laurel_aggs
		WHERE board = $1 AND win = $2 AND (span >= $3 AND span < $4 OR span >= $5 AND span < $6)`,
		b.id, ws.Name, r.Leaving.Start, r.Leaving.End, r.Entering.Start, r.Entering.End)
	if err != nil {
		return fmt.Errorf("postgres: roll %s: %w", ws.Name, err)
	}
	if len(members) == 0 {
		return nil
	}
	return s.recomputeRolling(ctx, b, ws, members)
}

// members runs a query that answers members.
func (s *step) members(ctx context.Context, sql string, args ...any) ([]string, error) {
	rows, err := s.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// recomputeRolling sets the aggregates over a rolling window's current span of members (nil:
// every member with a bucket in it) from their buckets.
func (s *step) recomputeRolling(ctx context.Context, b *boardStep, ws *windowState, members []string) error {
	sp := ws.Open[0]
	q := "SELECT member, score, coalesce(sub, 0), at FROM laurel_aggs WHERE board = $1 AND win = $2 AND span >= $3 AND span < $4"
	args := []any{b.id, ws.Name, sp.Start, sp.End}
	if members != nil {
		q += " AND member = ANY($5)"
		args = append(args, members)
	}
	rows, err := s.tx.Query(ctx, q+" ORDER BY member, span", args...)
	if err != nil {
		return fmt.Errorf("postgres: recompute %s: %w", ws.Name, err)
	}
	defer rows.Close()
	m, o := b.st.cfg.Mode, b.st.cfg.Ordering()
	combined := make(map[string]laurel.Agg, len(members))
	for _, member := range members {
		combined[member] = laurel.Agg{}
	}
	for rows.Next() {
		var member string
		var a laurel.Agg
		if err := rows.Scan(&member, &a.Score, &a.Sub, &a.At); err != nil {
			return err
		}
		a.Count = 1
		c, err := laurel.Merge(m, o, combined[member], a)
		if err != nil {
			// Sums that were each checked can add up past int64 when the bucket that
			// balanced them leaves; keep the member at what fits rather than wrap around.
			s.e.log.Error("rolling sum out of int64 range", "board", b.id, "window", ws.Name, "member", member)
		}
		combined[member] = c
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for member, c := range combined {
		b.set(aggKey{ws.Name, currentSpan, member}, valOf(c))
	}
	return nil
}
