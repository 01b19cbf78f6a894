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
	"github.com/laurel/laurel"
)

var _ laurel.Exporter = (*Store)(nil)

// Export writes everything the store holds as a dump, from one snapshot of the database
// (a repeatable-read transaction): writes may go on meanwhile.
func (e *Store) Export(ctx context.Context, w *laurel.DumpWriter) error {
	tx, err := e.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	x := exporter{ctx: ctx, tx: tx, w: w}
	err = x.each("SELECT member, name, metadata FROM laurel_profiles ORDER BY member", nil, func(rows pgx.Rows) error {
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
		err = x.each("SELECT member FROM laurel_hidden ORDER BY member", nil, func(rows pgx.Rows) error {
			var m string
			if err := rows.Scan(&m); err != nil {
				return err
			}
			return w.Write(laurel.DumpRecord{Hidden: &m})
		})
	}
	if err == nil {
		err = x.each("SELECT kind, key, value FROM laurel_records ORDER BY kind, key", nil, func(rows pgx.Rows) error {
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
		if err := x.board(st); err != nil {
			return fmt.Errorf("postgres: export board %s: %w", b.id, err)
		}
	}
	return nil
}

type exporter struct {
	ctx context.Context
	tx  pgx.Tx
	w   *laurel.DumpWriter
}

// each runs a query and calls fn on each row as it comes.
func (x exporter) each(sql string, args []any, fn func(pgx.Rows) error) error {
	rows, err := x.tx.Query(x.ctx, sql, args...)
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

func (x exporter) board(st *state) error {
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
	err := x.each("SELECT seq, member, value, ts, coalesce(id, ''), retracted FROM laurel_events WHERE board = $1 ORDER BY seq", []any{id}, func(rows pgx.Rows) error {
		ev := &laurel.DumpEvent{Board: id}
		var seq int64
		if err := rows.Scan(&seq, &ev.Member, &ev.Value, &ev.TS, &ev.ID, &ev.Retracted); err != nil {
			return err
		}
		ev.Seq = uint64(seq)
		return x.w.Write(laurel.DumpRecord{Event: ev})
	})
	if err != nil {
		return err
	}
	// A rolling window's aggregates over its current span are derived from its buckets;
	// the importer computes them for its own now.
	err = x.each("SELECT win, span, member, score, at FROM laurel_aggs WHERE board = $1 AND span <> $2 ORDER BY win, span, member", []any{id, int64(currentSpan)}, func(rows pgx.Rows) error {
		a := &laurel.DumpAgg{Board: id}
		if err := rows.Scan(&a.Window, &a.Start, &a.Member, &a.Score, &a.At); err != nil {
			return err
		}
		return x.w.Write(laurel.DumpRecord{Agg: a})
	})
	if err != nil {
		return err
	}
	for _, ws := range st.Windows {
		for _, cp := range slices.Backward(ws.Closed) { // oldest first
			var removed []int32
			if err := x.tx.QueryRow(x.ctx, "SELECT removed FROM laurel_closed WHERE board = $1 AND win = $2 AND span = $3", id, ws.Name, cp.Start).Scan(&removed); err != nil {
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
			err := x.each("SELECT rank, member, score, at FROM laurel_frozen WHERE board = $1 AND win = $2 AND span = $3 ORDER BY rank", []any{id, ws.Name, cp.Start}, func(rows pgx.Rows) error {
				f := &laurel.DumpFrozen{Board: id, Window: ws.Name, Start: cp.Start}
				var rank int32
				if err := rows.Scan(&rank, &f.Member, &f.Score, &f.At); err != nil {
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
	return x.each("SELECT member, seq, ts, points FROM laurel_history WHERE board = $1 ORDER BY member, seq", []any{id}, func(rows pgx.Rows) error {
		h := &laurel.DumpHistory{Board: id}
		var seq int64
		var points []byte
		if err := rows.Scan(&h.Member, &seq, &h.TS, &points); err != nil {
			return err
		}
		h.Seq = uint64(seq)
		if err := json.Unmarshal(points, &h.Points); err != nil {
			return err
		}
		return x.w.Write(laurel.DumpRecord{History: h})
	})
}

// Import loads a dump into the store. None of its boards may exist; its profiles and hidden
// marks are added to the store's. Each board is imported in a step of its own, under its
// lock, and its index is built once it is in: a failure leaves the boards before it
// imported and none of the one that failed. The boards then catch up with the store's
// clock as any board does: periods that ended meanwhile close, rolling windows move.
func (e *Store) Import(ctx context.Context, r *laurel.DumpReader) error {
	rec, err := r.Next()
	for err == nil && (rec.Profile != nil || rec.Hidden != nil || rec.Record != nil) {
		switch {
		case rec.Record != nil:
			_, err = e.pool.Exec(ctx, `INSERT INTO laurel_records (kind, key, value) VALUES ($1, $2, $3)
				ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value`, rec.Record.Kind, rec.Record.Key, rec.Record.Value)
		case rec.Profile != nil:
			p := rec.Profile
			var metadata *string
			if p.Metadata != nil {
				metadata = ptr(string(p.Metadata))
			}
			_, err = e.pool.Exec(ctx, `INSERT INTO laurel_profiles (member, name, metadata) VALUES ($1, $2, $3)
				ON CONFLICT (member) DO UPDATE SET name = excluded.name, metadata = excluded.metadata`, p.Member, p.Name, metadata)
		default:
			_, err = e.pool.Exec(ctx, "INSERT INTO laurel_hidden (member) VALUES ($1) ON CONFLICT DO NOTHING", *rec.Hidden)
		}
		if err == nil {
			rec, err = r.Next()
		}
	}
	for err == nil {
		if rec.Board == nil {
			return laurel.DumpError(r.Line(), "a board's records must follow its board record")
		}
		rec, err = e.importBoard(ctx, r, rec.Board)
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// importBoard imports one board's records and returns the record after them.
func (e *Store) importBoard(ctx context.Context, r *laurel.DumpReader, board *laurel.DumpBoard) (laurel.DumpRecord, error) {
	cfg := *r.Board()
	var next laurel.DumpRecord
	var nextErr error
	err := e.write(ctx, []target{wholeBoard(board.ID)}, func(s *step) error {
		b := s.boards[board.ID]
		if b.st != nil {
			return laurel.DumpError(r.Line(), "board %q exists already", board.ID)
		}
		st := newState(cfg, e.opts.Shards, s.now)
		for i := range st.Windows {
			if m, ok := board.Marks[st.Windows[i].Name]; ok {
				st.Windows[i].Marks = m
			}
		}
		b.st, b.stateChanged, b.rebuild = st, true, true
		in := importer{s: s, b: b}
		for {
			next, nextErr = r.Next()
			if nextErr != nil || next.Board != nil {
				break
			}
			if err := in.add(next); err != nil {
				return err
			}
		}
		if nextErr != nil && !errors.Is(nextErr, io.EOF) {
			return nextErr
		}
		if err := in.flush(); err != nil {
			return err
		}
		b.makeShards() // numbering events above the dump's
		for i := range st.Windows {
			ws := &st.Windows[i]
			slices.SortFunc(ws.Closed, func(a, b closedPeriod) int { return cmp.Compare(b.Start, a.Start) }) // newest first
			if ws.w.IsRolling() {
				if err := s.recomputeRolling(b, ws, nil); err != nil {
					return err
				}
			}
			if len(ws.Closed) > 0 {
				ws.DropAt = ws.Marks.DropTime(&st.cfg, ws.w, ws.Closed[len(ws.Closed)-1].Start)
			}
		}
		return nil
	})
	if err != nil {
		return next, err
	}
	return next, nextErr
}

// importer copies a board's records into the store in batches.
type importer struct {
	s      *step
	b      *boardStep
	table  string
	cols   []string
	rows   [][]any
	closed map[[2]any]bool
}

const importBatch = 10_000

func (in *importer) queue(table string, cols []string, row ...any) error {
	if in.table != table || len(in.rows) >= importBatch {
		if err := in.flush(); err != nil {
			return err
		}
		in.table, in.cols = table, cols
	}
	in.rows = append(in.rows, row)
	return nil
}

func (in *importer) flush() error {
	if len(in.rows) == 0 {
		return nil
	}
	_, err := in.s.tx.CopyFrom(in.s.ctx, pgx.Identifier{in.table}, in.cols, pgx.CopyFromRows(in.rows))
	in.rows = in.rows[:0]
	if err != nil {
		return fmt.Errorf("postgres: import into %s: %w", in.table, err)
	}
	return nil
}

var (
	eventCols   = []string{"board", "seq", "member", "value", "ts", "id", "retracted"}
	aggCols     = []string{"board", "win", "span", "member", "score", "at"}
	closedCols  = []string{"board", "win", "span", "total", "removed"}
	frozenCols  = []string{"board", "win", "span", "rank", "member", "score", "at"}
	historyCols = []string{"board", "member", "seq", "ts", "points"}
)

func (in *importer) add(rec laurel.DumpRecord) error {
	b := in.b
	switch {
	case rec.Event != nil:
		ev := rec.Event
		var id *string
		if ev.ID != "" {
			id = &ev.ID
		}
		b.seqFloor = max(b.seqFloor, int64(ev.Seq))
		return in.queue("laurel_events", eventCols, b.id, int64(ev.Seq), ev.Member, ev.Value, ev.TS, id, ev.Retracted)
	case rec.Agg != nil:
		a := rec.Agg
		ws := b.st.window(a.Window)
		if ws.w.IsCalendar() {
			p := b.st.cfg.CurrentPeriod(ws.w, a.Start)
			ws.addOpen(p.Start, p.End)
		}
		return in.queue("laurel_aggs", aggCols, b.id, a.Window, a.Start, a.Member, a.Score, a.At)
	case rec.Closed != nil:
		c := rec.Closed
		ws := b.st.window(c.Window)
		ws.Closed = slices.Insert(ws.Closed, 0, closedPeriod{ID: c.ID, Start: c.Start, End: c.End, Total: c.Total})
		removed := make([]int32, len(c.Removed))
		for i, r := range c.Removed {
			removed[i] = int32(r)
		}
		return in.queue("laurel_closed", closedCols, b.id, c.Window, c.Start, int32(c.Total), removed)
	case rec.Frozen != nil:
		f := rec.Frozen
		return in.queue("laurel_frozen", frozenCols, b.id, f.Window, f.Start, int32(f.Rank), f.Member, f.Score, f.At)
	case rec.History != nil:
		h := rec.History
		points, err := json.Marshal(h.Points)
		if err != nil {
			return err
		}
		return in.queue("laurel_history", historyCols, b.id, h.Member, int64(h.Seq), h.TS, string(points))
	}
	return nil
}
