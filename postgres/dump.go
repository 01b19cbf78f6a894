package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/laurel/laurel"
)

var _ laurel.Exporter = (*Store)(nil)

// Export writes everything the store holds as a dump, from one snapshot of the database
// (a repeatable-read transaction): writes may go on meanwhile.
func (s *Store) Export(ctx context.Context, w *laurel.DumpWriter) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	x := exporter{tx: tx, w: w}
	err = x.each(ctx, "SELECT member, name, metadata FROM laurel_profiles ORDER BY member", nil, func(rows pgx.Rows) error {
		p := new(laurel.DumpProfile)
		var metadata []byte
		if err := rows.Scan(&p.Member, &p.Name, &metadata); err != nil {
			return err
		}
		if metadata != nil {
			p.Metadata = json.RawMessage(metadata)
		}
		return w.Write(laurel.DumpRecord{Profile: p})
	})
	if err == nil {
		err = x.each(ctx, "SELECT member FROM laurel_hidden ORDER BY member", nil, func(rows pgx.Rows) error {
			var m string
			if err := rows.Scan(&m); err != nil {
				return err
			}
			return w.Write(laurel.DumpRecord{Hidden: &m})
		})
	}
	if err == nil {
		err = x.each(ctx, "SELECT kind, key, value FROM laurel_records ORDER BY kind, key", nil, func(rows pgx.Rows) error {
			r := new(laurel.DumpRec)
			if err := rows.Scan(&r.Kind, &r.Key, &r.Value); err != nil {
				return err
			}
			return w.Write(laurel.DumpRecord{Record: r})
		})
	}
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT id, state FROM laurel_boards ORDER BY id")
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	type boardRow struct {
		id    string
		state []byte
	}
	boards, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (boardRow, error) {
		var b boardRow
		err := r.Scan(&b.id, &b.state)
		return b, err
	})
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	for _, b := range boards {
		st, err := decodeState(b.id, b.state)
		if err != nil {
			return fmt.Errorf("postgres: export board %s: %w", b.id, err)
		}
		if err := x.board(ctx, st); err != nil {
			return fmt.Errorf("postgres: export board %s: %w", b.id, err)
		}
	}
	return nil
}

type exporter struct {
	tx pgx.Tx
	w  *laurel.DumpWriter
}

// each runs a query and calls fn on each row as it comes.
func (x exporter) each(ctx context.Context, sql string, args []any, fn func(pgx.Rows) error) error {
	rows, err := x.tx.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (x exporter) board(ctx context.Context, st *state) error {
	id := st.cfg.ID
	rec := &laurel.DumpBoard{ID: id, Config: st.Config.BoardSpec, CreatedAt: st.Config.CreatedAt}
	for _, ws := range st.Windows {
		if ws.Marks != laurel.NoMarks {
			if rec.Marks == nil {
				rec.Marks = make(map[string]laurel.Marks)
			}
			rec.Marks[ws.Name] = ws.Marks
		}
	}
	if err := x.w.Write(laurel.DumpRecord{Board: rec}); err != nil {
		return err
	}
	err := x.each(ctx, "SELECT seq, member, value, coalesce(sub, 0), ts, coalesce(id, ''), retracted, tag FROM laurel_events WHERE board = $1 ORDER BY seq", []any{id}, func(rows pgx.Rows) error {
		ev := &laurel.DumpEvent{Board: id}
		var seq int64
		var tag *string
		if err := rows.Scan(&seq, &ev.Member, &ev.Value, &ev.Sub, &ev.TS, &ev.ID, &ev.Retracted, &tag); err != nil {
			return err
		}
		ev.Seq, ev.Tag = uint64(seq), tagJSON(tag)
		return x.w.Write(laurel.DumpRecord{Event: ev})
	})
	if err != nil {
		return err
	}
	// A rolling window's aggregates over its current span are derived from its buckets;
	// the importer computes them for its own now.
	err = heldAggs(ctx, x.tx, st, true, func(k aggKey, v aggVal) error {
		if k.span == currentSpan {
			return nil
		}
		return x.w.Write(laurel.DumpRecord{Agg: &laurel.DumpAgg{Board: id, Window: k.win, Start: k.span, Member: k.member, Score: v.score, Sub: v.sub, At: v.at}})
	})
	if err != nil {
		return err
	}
	for _, ws := range st.Windows {
		for _, cp := range slices.Backward(ws.Closed) { // oldest first
			var removed []int32
			if err := x.tx.QueryRow(ctx, "SELECT removed FROM laurel_closed WHERE board = $1 AND win = $2 AND span = $3", id, ws.Name, cp.Start).Scan(&removed); err != nil {
				return err
			}
			c := &laurel.DumpClosed{Board: id, Window: ws.Name, ID: cp.ID, Start: cp.Start, End: cp.End, Total: cp.Total}
			for _, r := range removed {
				c.Removed = append(c.Removed, uint32(r))
			}
			slices.Sort(c.Removed)
			if err := x.w.Write(laurel.DumpRecord{Closed: c}); err != nil {
				return err
			}
			err := x.each(ctx, "SELECT rank, member, score, coalesce(sub, 0), at FROM laurel_frozen WHERE board = $1 AND win = $2 AND span = $3 ORDER BY rank", []any{id, ws.Name, cp.Start}, func(rows pgx.Rows) error {
				f := &laurel.DumpFrozen{Board: id, Window: ws.Name, Start: cp.Start}
				var rank int32
				if err := rows.Scan(&rank, &f.Member, &f.Score, &f.Sub, &f.At); err != nil {
					return err
				}
				f.Rank = uint32(rank)
				return x.w.Write(laurel.DumpRecord{Frozen: f})
			})
			if err != nil {
				return err
			}
		}
	}
	return x.each(ctx, "SELECT member, seq, ts, points FROM laurel_history WHERE board = $1 ORDER BY member, seq", []any{id}, func(rows pgx.Rows) error {
		h := &laurel.DumpHistory{Board: id}
		var seq int64
		var points []byte
		if err := rows.Scan(&h.Member, &seq, &h.TS, &points); err != nil {
			return err
		}
		h.Seq = uint64(seq)
		var stored map[string][3]int64 // score, rank, subscore (encodePoints)
		if err := json.Unmarshal(points, &stored); err != nil {
			return err
		}
		h.Points = make(map[string][2]int64, len(stored))
		for w, p := range stored {
			h.Points[w] = [2]int64{p[0], p[1]}
			if p[2] != 0 {
				if h.Subs == nil {
					h.Subs = make(map[string]int64)
				}
				h.Subs[w] = p[2]
			}
		}
		return x.w.Write(laurel.DumpRecord{History: h})
	})
}

// Import loads a dump whose boards are those named into the store, all of it or nothing: one
// step, under the locks of all its boards (none of which may exist), stores its records,
// profiles and hidden marks (which replace or join the store's) and boards, checks what the
// dump's reader cannot check on its own (event ids unique among the events that count,
// history points of their members' events), and commits; then the index of each board is
// built. The boards then catch up with the store's clock as any board does: periods that
// ended meanwhile close, rolling windows move.
func (s *Store) Import(ctx context.Context, r *laurel.DumpReader, boards []string) error {
	targets := make([]target, len(boards))
	for i, id := range boards {
		targets[i] = wholeBoard(id)
	}
	tried := false
	err := s.write(ctx, targets, func(ctx context.Context, w *step) error {
		if tried {
			// The dump is read once: a step that starts again (a board made meanwhile
			// changed its locks) cannot.
			return laurel.Errorf(laurel.EConflict, "the dump's boards changed while it was imported; nothing was imported")
		}
		tried = true
		for _, id := range boards {
			if w.boards[id].st != nil {
				return laurel.Errorf(laurel.EConflict, "board %q exists already; nothing was imported", id)
			}
		}
		rec, err := r.Next()
		for err == nil && rec.Board == nil {
			err = w.importShared(ctx, rec)
			if err == nil {
				rec, err = r.Next()
			}
		}
		for err == nil {
			if !slices.Contains(boards, rec.Board.ID) {
				return laurel.DumpError(r.Line(), "board %q is not one of the dump's boards as read before", rec.Board.ID)
			}
			rec, err = w.importBoard(ctx, r, rec.Board)
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		return w.checkImported(ctx, boards)
	})
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" /* unique_violation */ {
		return laurel.Errorf(laurel.EInvalid, "the dump is not valid: %s (%s); nothing was imported", importConflicts[pg.ConstraintName], pg.Detail)
	}
	return err
}

// importConflicts says what a unique constraint that an import broke found in the dump.
var importConflicts = map[string]string{
	"laurel_events_id":     "an event id is the id of an earlier event of its board that is not retracted",
	"laurel_events_pkey":   "two events of a board have one seq",
	"laurel_frozen_member": "a member comes twice in a closed period",
	"laurel_frozen_pkey":   "a rank comes twice in a closed period",
	"laurel_closed_pkey":   "a period is closed twice",
	"laurel_aggs_pkey":     "a member has two aggregates of one span",
	"laurel_history_pkey":  "an event has two history points",
}

// importShared stores a record that is no board's: a record of Records (one the store holds
// already must be the same), a profile (which replaces the store's) or a hidden mark.
func (s *step) importShared(ctx context.Context, rec laurel.DumpRecord) error {
	var err error
	switch {
	case rec.Record != nil:
		// A record the store holds already (a webhook, say) is the deployment's own: the
		// dump's may equal it, not replace it.
		r := rec.Record
		var differs bool
		err = s.tx.QueryRow(ctx, `WITH added AS (INSERT INTO laurel_records (kind, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (kind, key) DO NOTHING RETURNING 1)
			SELECT NOT EXISTS (SELECT 1 FROM added) AND value <> $3 FROM laurel_records WHERE kind = $1 AND key = $2
			UNION ALL SELECT false LIMIT 1`, r.Kind, r.Key, r.Value).Scan(&differs)
		if err == nil && differs {
			return laurel.Errorf(laurel.EConflict, "the store has a %s record %q of its own, which the dump's would replace; nothing was imported", r.Kind, r.Key)
		}
	case rec.Profile != nil:
		p := rec.Profile
		var metadata *string
		if p.Metadata != nil {
			metadata = ptr(string(p.Metadata))
		}
		_, err = s.tx.Exec(ctx, `INSERT INTO laurel_profiles (member, name, metadata) VALUES ($1, $2, $3)
			ON CONFLICT (member) DO UPDATE SET name = excluded.name, metadata = excluded.metadata`, p.Member, p.Name, metadata)
	case rec.Hidden != nil:
		_, err = s.tx.Exec(ctx, "INSERT INTO laurel_hidden (member) VALUES ($1) ON CONFLICT DO NOTHING", *rec.Hidden)
	}
	if err != nil {
		return fmt.Errorf("postgres: import: %w", err)
	}
	return nil
}

// checkImported refuses history points that are not of an event of their member: the dump's
// reader, which keeps no board's events, cannot tell.
func (s *step) checkImported(ctx context.Context, boards []string) error {
	var board, member string
	var seq int64
	err := s.tx.QueryRow(ctx, `SELECT h.board, h.member, h.seq FROM laurel_history h
		LEFT JOIN laurel_events e ON e.board = h.board AND e.seq = h.seq
		WHERE h.board = ANY($1) AND (e.seq IS NULL OR e.member <> h.member) LIMIT 1`, boards).Scan(&board, &member, &seq)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("postgres: import: %w", err)
	}
	return laurel.Errorf(laurel.EInvalid, "the dump is not valid: history of member %q: no event %d of board %q of that member; nothing was imported", member, seq, board)
}

// importBoard imports one board's records, in the import's step, and returns the record
// after them.
func (s *step) importBoard(ctx context.Context, r *laurel.DumpReader, board *laurel.DumpBoard) (laurel.DumpRecord, error) {
	cfg := *r.Board()
	b := s.boards[board.ID]
	st := newState(cfg, s.e.opts.Shards, s.now)
	for i := range st.Windows {
		if m, ok := board.Marks[st.Windows[i].Name]; ok {
			st.Windows[i].Marks = m
		}
	}
	b.st, b.stateChanged, b.rebuild = st, true, true
	in := importer{s: s, b: b}
	var next laurel.DumpRecord
	var err error
	for {
		next, err = r.Next()
		if err != nil || next.Board != nil {
			break
		}
		if err := in.add(ctx, next); err != nil {
			return next, err
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return next, err
	}
	if err := in.flush(ctx); err != nil {
		return next, err
	}
	// The dump's aggregates were copied as rows, one each: all but the buckets go into their
	// members' rows.
	if _, err := s.tx.Exec(ctx, moveToMemberRowsSQL, b.id); err != nil {
		return next, fmt.Errorf("postgres: import: %w", err)
	}
	b.makeShards() // numbering events above the dump's
	for i := range st.Windows {
		ws := &st.Windows[i]
		slices.SortFunc(ws.Closed, func(a, b closedPeriod) int { return cmp.Compare(b.Start, a.Start) }) // newest first
		if ws.w.IsRolling() {
			if err := s.recomputeRolling(ctx, b, ws, nil); err != nil {
				return next, err
			}
		}
		if len(ws.Closed) > 0 {
			ws.DropAt = ws.Marks.DropTime(&st.cfg, ws.w, ws.Closed[len(ws.Closed)-1].Start)
		}
	}
	return next, err
}

// importer copies a board's records into the store in batches.
type importer struct {
	s     *step
	b     *boardStep
	table string
	cols  []string
	rows  [][]any
}

const importBatch = 10_000

func (in *importer) queue(ctx context.Context, table string, cols []string, row ...any) error {
	if in.table != table || len(in.rows) >= importBatch {
		if err := in.flush(ctx); err != nil {
			return err
		}
		in.table, in.cols = table, cols
	}
	in.rows = append(in.rows, row)
	return nil
}

func (in *importer) flush(ctx context.Context) error {
	if len(in.rows) == 0 {
		return nil
	}
	_, err := in.s.tx.CopyFrom(ctx, pgx.Identifier{in.table}, in.cols, pgx.CopyFromRows(in.rows))
	in.rows = in.rows[:0]
	if err != nil {
		return fmt.Errorf("postgres: import into %s: %w", in.table, err)
	}
	return nil
}

var (
	eventCols   = []string{"board", "seq", "member", "value", "ts", "id", "retracted", "tag", "sub"}
	aggCols     = []string{"board", "win", "span", "member", "score", "at", "sub"}
	closedCols  = []string{"board", "win", "span", "total", "removed"}
	frozenCols  = []string{"board", "win", "span", "rank", "member", "score", "at", "sub"}
	historyCols = []string{"board", "member", "seq", "ts", "points"}
)

// sub is a subscore as the board's rows hold it: NULL on a board without one (the dump's
// reader refused any other than 0 there).
func (in *importer) sub(v int64) any {
	if in.b.st.cfg.Subscore == nil {
		return nil
	}
	return v
}

func (in *importer) add(ctx context.Context, rec laurel.DumpRecord) error {
	b := in.b
	switch {
	case rec.Event != nil:
		ev := rec.Event
		var id *string
		if ev.ID != "" {
			id = &ev.ID
		}
		var tag *string
		if ev.Tag != nil {
			t := string(ev.Tag)
			tag = &t
		}
		b.seqFloor = max(b.seqFloor, int64(ev.Seq))
		return in.queue(ctx, "laurel_events", eventCols, b.id, int64(ev.Seq), ev.Member, ev.Value, ev.TS, id, ev.Retracted, tag, in.sub(ev.Sub))
	case rec.Agg != nil:
		a := rec.Agg
		ws := b.st.window(a.Window)
		if ws.w.IsCalendar() {
			p := b.st.cfg.CurrentPeriod(ws.w, a.Start)
			ws.addOpen(p.Start, p.End)
		}
		return in.queue(ctx, "laurel_aggs", aggCols, b.id, a.Window, a.Start, a.Member, a.Score, a.At, in.sub(a.Sub))
	case rec.Closed != nil:
		c := rec.Closed
		ws := b.st.window(c.Window)
		ws.Closed = slices.Insert(ws.Closed, 0, closedPeriod{ID: c.ID, Start: c.Start, End: c.End, Total: c.Total})
		removed := make([]int32, len(c.Removed))
		for i, r := range c.Removed {
			removed[i] = int32(r)
		}
		return in.queue(ctx, "laurel_closed", closedCols, b.id, c.Window, c.Start, int32(c.Total), removed)
	case rec.Frozen != nil:
		f := rec.Frozen
		return in.queue(ctx, "laurel_frozen", frozenCols, b.id, f.Window, f.Start, int32(f.Rank), f.Member, f.Score, f.At, in.sub(f.Sub))
	case rec.History != nil:
		h := rec.History
		points := make([]historyPoint, 0, len(h.Points))
		for w, p := range h.Points {
			points = append(points, historyPoint{window: w, score: p[0], rank: int(p[1]), sub: h.Subs[w]})
		}
		return in.queue(ctx, "laurel_history", historyCols, b.id, h.Member, int64(h.Seq), h.TS, encodePoints(points))
	}
	return nil
}
