package postgres

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// Check verifies, for every board, that the index is what the store says it is (state,
// version, and every set, hidden members left out) and that the store's aggregates are what
// its retained events add up to. It reads everything: it is for tests and for an operator
// who suspects the index.
func (s *Store) Check(ctx context.Context) error {
	ids, err := s.boardIDs(ctx, s.pool)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.checkBoard(ctx, id); err != nil {
			return fmt.Errorf("board %s: %w", id, err)
		}
	}
	return nil
}

func (s *Store) checkBoard(ctx context.Context, id string) error {
	var raw []byte
	var stamp int64
	var versions []int64
	if err := s.pool.QueryRow(ctx, `SELECT b.state, b.version, array(SELECT s.version FROM laurel_shards s WHERE s.board = b.id ORDER BY s.shard)
		FROM laurel_boards b WHERE b.id = $1`, id).Scan(&raw, &stamp, &versions); err != nil {
		return err
	}
	st, err := decodeState(id, raw)
	if err != nil {
		return err
	}
	if len(versions) != st.shards() {
		return fmt.Errorf("the store has %d shards of the board, its state says %d", len(versions), st.shards())
	}
	is, ok, err := s.index.State(ctx, id)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("the index has no state")
	case is.Stamp != stamp:
		return fmt.Errorf("the index's state is stamped %d, the store's %d", is.Stamp, stamp)
	case !bytes.Equal(is.State, raw):
		return fmt.Errorf("the index's state differs from the store's:\n index %s\n store %s", is.State, raw)
	}
	vs, err := s.index.Versions(ctx, id, st.shards())
	if err != nil {
		return err
	}
	for i, v := range vs {
		if v.Version != versions[i] || v.Stamp != stamp {
			return fmt.Errorf("shard %d of the index is at version %d stamped %d, the store's at %d stamped %d", i, v.Version, v.Stamp, versions[i], stamp)
		}
	}
	stored, err := s.storedAggs(ctx, st)
	if err != nil {
		return err
	}
	want, err := s.aggsFromEvents(ctx, st)
	if err != nil {
		return err
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), compareKeys) {
		if got, ok := stored[k]; !ok || got != want[k] {
			return fmt.Errorf("aggregate %v is %+v (stored: %v), its events make %+v", k, got, ok, want[k])
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(stored), compareKeys) {
		if _, ok := want[k]; !ok {
			return fmt.Errorf("aggregate %v = %+v is stored, but no event makes it", k, stored[k])
		}
	}
	rows, err := s.pool.Query(ctx, "SELECT member FROM laurel_hidden")
	if err != nil {
		return err
	}
	hidden, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for i := range st.Windows {
		ws := &st.Windows[i]
		for _, sp := range ws.rankedSpans() {
			var entries []laurel.Entry
			var members []string // every member with an aggregate of the span, hidden or not
			for k, v := range stored {
				if k.win != ws.Name || k.span != sp {
					continue
				}
				members = append(members, k.member)
				if !slices.Contains(hidden, k.member) {
					entries = append(entries, laurel.Entry{Member: k.member, Score: v.score, Sub: v.sub, ReachedAt: v.at})
				}
			}
			set, _ := ws.indexSet(sp)
			what := fmt.Sprintf("set %v", set)
			rk := s.openRanking(st, set, stamp)
			if err := sameRanking(ctx, what, rk, st.cfg.Ordering(), entries); err != nil {
				return err
			}
			// Each shard's hash finds its members' entries, and no other.
			found, err := rk.Entries(ctx, members)
			if err != nil {
				return err
			}
			slices.SortFunc(found, func(a, b laurel.Entry) int { return a.Rank - b.Rank })
			if err := sameEntries(what+", by member,", found, st.cfg.Ordering(), entries); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameRanking compares a ranking of the index with the entries the store holds.
func sameRanking(ctx context.Context, what string, r laurel.Ranking, o laurel.Ordering, entries []laurel.Entry) error {
	total, err := r.Total(ctx)
	if err != nil {
		return err
	}
	got, err := r.Page(ctx, 1, max(total, 1))
	if err != nil {
		return err
	}
	if total != len(entries) {
		return fmt.Errorf("%s of the index holds %d, the store %d", what, total, len(entries))
	}
	return sameEntries(what, got, o, entries)
}

// sameEntries compares entries the index ranked, in rank order, with the entries the store
// holds.
func sameEntries(what string, got []laurel.Entry, o laurel.Ordering, entries []laurel.Entry) error {
	want, _ := laurel.NewSortedRanking(o, slices.Clone(entries)).Page(context.Background(), 1, len(entries))
	if len(got) != len(want) || !slices.EqualFunc(got, want, func(a, b laurel.Entry) bool {
		return a.Rank == b.Rank && a.Member == b.Member && a.Score == b.Score && a.Sub == b.Sub && a.ReachedAt == b.ReachedAt
	}) {
		return fmt.Errorf("%s of the index holds %d: %v\nthe store: %v", what, len(got), got, want)
	}
	return nil
}

func compareKeys(a, b aggKey) int {
	return cmp.Or(cmp.Compare(a.win, b.win), cmp.Compare(a.span, b.span), cmp.Compare(a.member, b.member))
}

// storedAggs reads the aggregates the store holds of a board as st says: its rolling buckets
// and the elements of its members' rows that st holds.
func (s *Store) storedAggs(ctx context.Context, st *state) (map[aggKey]aggVal, error) {
	out := make(map[aggKey]aggVal)
	err := heldAggs(ctx, s.pool, st, true, func(k aggKey, v aggVal) error {
		out[k] = v
		return nil
	})
	return out, err
}

// aggsFromEvents computes the aggregates the store should hold from the board's counted
// events: those of its open calendar periods, all, every rolling bucket, and each rolling
// window's current span.
func (s *Store) aggsFromEvents(ctx context.Context, st *state) (map[aggKey]aggVal, error) {
	rows, err := s.pool.Query(ctx, "SELECT seq, member, value, coalesce(sub, 0), ts FROM laurel_events WHERE board = $1 AND NOT retracted ORDER BY member, seq", st.cfg.ID)
	if err != nil {
		return nil, err
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storedEvent, error) {
		var ev storedEvent
		err := r.Scan(&ev.seq, &ev.member, &ev.value, &ev.sub, &ev.ts)
		return ev, err
	})
	if err != nil {
		return nil, err
	}
	cfg := &st.cfg
	cal := cfg.Calendar()
	out := make(map[aggKey]aggVal)
	for len(events) > 0 {
		n := 1
		for n < len(events) && events[n].member == events[0].member {
			n++
		}
		mine, member := events[:n], events[0].member
		events = events[n:]
		for i := range st.Windows {
			ws := &st.Windows[i]
			spans := make(map[int64]int64)
			for _, ev := range mine {
				start, end := cal.SpanOf(ws.w, ev.ts)
				if ws.w.IsCalendar() && !ws.openAt(start) {
					continue
				}
				spans[start] = end
			}
			if ws.w.IsRolling() {
				spans[currentSpan] = 0
			}
			for start, end := range spans {
				lo, hi := start, end
				if start == currentSpan {
					lo, hi = ws.Open[0].Start, ws.Open[0].End
				}
				a, err := laurel.AggOf(cfg.Mode, cfg.Ordering(), counted(mine), laurel.Span{Start: lo, End: hi})
				if err != nil {
					return nil, err
				}
				if a.Present() {
					out[aggKey{ws.Name, start, member}] = valOf(a)
				}
			}
		}
	}
	return out, nil
}
