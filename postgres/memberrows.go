package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A member's row (migrations/007_member_rows.sql): of a member's aggregates on a board, those
// a write changes and reads again — all, the open calendar periods' and each rolling window's
// current span — are the elements of one row of laurel_members, which a step reads whole and
// writes whole. A rolling window's buckets are rows of laurel_aggs, one an aggregate. So an
// event costs PostgreSQL two rows (its member's and its bucket's) rather than one a window.
//
// An element of a calendar period that has closed stays in a row until its member's next
// write drops it (deleting it at the close, under the board's lock, rewrote every member's
// row): whatever reads a row takes only the elements the board's state holds (state.holds).

// bucket reports whether k is a rolling window's bucket, which has a row of its own; any other
// aggregate is an element of its member's row. A rolling window is last<N>d or last<N>h
// (laurel.ParseWindow), its aggregate over its current span under currentSpan.
func bucket(k aggKey) bool {
	return k.span != currentSpan && strings.HasPrefix(k.win, "last")
}

// holds reports whether the aggregate of k, an element of a member's row, counts in the board
// as st is: its window's one span for all and a rolling window, an open period for a calendar
// window. An element it does not hold is a period closed since its member's last write.
func (st *state) holds(k aggKey) bool {
	ws := st.window(k.win)
	switch {
	case ws == nil:
		return false
	case ws.w.IsRolling():
		return k.span == currentSpan
	case ws.w.IsCalendar():
		return ws.openAt(k.span)
	}
	return k.span == 0
}

// memberRow is what a step knows of a member's row.
type memberRow struct {
	// loaded: the row was read (from the store, or the node's cache of it), so every element
	// the board holds is in the step's aggregates, and an aggregate missing there is absent.
	loaded bool
	stored bool     // the store holds a row of the member
	keys   []aggKey // the row's elements the step has: read or written
}

func (r *memberRow) add(k aggKey) {
	if !slices.Contains(r.keys, k) {
		r.keys = append(r.keys, k)
	}
}

// rowOf returns what the step knows of member's row.
func (b *boardStep) rowOf(member string) *memberRow {
	r := b.rows[member]
	if r == nil {
		if b.rows == nil {
			b.rows = make(map[string]*memberRow)
		}
		r = new(memberRow)
		b.rows[member] = r
	}
	return r
}

// rowElem is an element of a member's row.
type rowElem struct {
	win  string
	span int64
	v    aggVal
}

// takeRow sets in b the elements of member's row that the board holds, as read from the store
// or the node's cache; an element the step has written keeps the step's value.
func (b *boardStep) takeRow(member string, stored bool, elems []rowElem) {
	r := b.rowOf(member)
	r.loaded, r.stored = true, stored
	for _, e := range elems {
		k := aggKey{e.win, e.span, member}
		if !b.st.holds(k) {
			continue
		}
		r.add(k)
		if b.dirty[k] {
			continue
		}
		b.aggs[k], b.stored[k] = e.v, true
	}
}

// elems returns the elements of a member's row as the step leaves them: present, and held by
// the board's state.
func (b *boardStep) elems(member string) []rowElem {
	r := b.rows[member]
	if r == nil {
		return nil
	}
	out := make([]rowElem, 0, len(r.keys))
	for _, k := range r.keys {
		if v := b.aggs[k]; v.present && b.st.holds(k) {
			out = append(out, rowElem{k.win, k.span, v})
		}
	}
	return out
}

// queueRows queues the read of members' rows, which it notes as read: a member without a
// row has no aggregate but its buckets.
func (s *step) queueRows(r *reads, b *boardStep, members []string) {
	for _, m := range members {
		row := b.rowOf(m)
		row.loaded, row.stored = true, false
	}
	r.queue(readMemberRowsSQL, []any{b.id, members}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read members' rows: %w", err)
		}
		defer rows.Close()
		var member string
		var wins []string
		var spans, scores, ats, subs []int64
		for rows.Next() {
			subs = subs[:0]
			if err := rows.Scan(&member, &wins, &spans, &scores, &ats, &subs); err != nil {
				return err
			}
			b.takeRow(member, true, rowElems(wins, spans, scores, ats, subs))
		}
		return rows.Err()
	})
}

// rowElems pairs the arrays of a member's row; subs is empty on a board without a subscore.
func rowElems(wins []string, spans, scores, ats, subs []int64) []rowElem {
	out := make([]rowElem, len(wins))
	for i := range wins {
		out[i] = rowElem{wins[i], spans[i], aggVal{score: scores[i], at: ats[i], present: true}}
		if i < len(subs) {
			out[i].v.sub = subs[i]
		}
	}
	return out
}

// readRows reads the rows of the members, among those given, that the step has not read.
func (s *step) readRows(ctx context.Context, b *boardStep, members []string) error {
	var ask []string
	for _, m := range members {
		if !b.rowOf(m).loaded {
			ask = append(ask, m)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	var r reads
	s.queueRows(&r, b, ask)
	return r.run(ctx, s)
}

// memberRows are members' rows to write, as the arrays of insertRowsSQL: member i's elements
// are lo[i] to hi[i] (from 1, as SQL's arrays) of the others.
type memberRows struct {
	hasSub             bool
	members            []string
	lo, hi             []int32
	wins               []string
	spans, scores, ats []int64
	subs               []int64
}

func (r *memberRows) append(member string, elems []rowElem) {
	r.members = append(r.members, member)
	r.lo = append(r.lo, int32(len(r.wins)+1))
	for _, e := range elems {
		r.wins, r.spans, r.scores, r.ats = append(r.wins, e.win), append(r.spans, e.span), append(r.scores, e.v.score), append(r.ats, e.v.at)
		if r.hasSub {
			r.subs = append(r.subs, e.v.sub)
		}
	}
	r.hi = append(r.hi, int32(len(r.wins)))
}

// queue queues the write of the rows of board, if any, by sql or, on a board with a subscore,
// by subSQL.
func (r *memberRows) queue(batch *pgx.Batch, sql, subSQL, board string) {
	switch {
	case len(r.members) == 0:
	case r.hasSub:
		batch.Queue(subSQL, board, r.members, r.lo, r.hi, r.wins, r.spans, r.scores, r.ats, r.subs)
	default:
		batch.Queue(sql, board, r.members, r.lo, r.hi, r.wins, r.spans, r.scores, r.ats)
	}
}

// queueRowWrites queues the writes of the rows of the members whose elements the step changed
// (dirty): each row whole, as the step leaves it, without the closed periods it held; a row
// left without elements goes. A row the step changed without reading it (a roll, an import)
// is read first.
func (s *step) queueRowWrites(ctx context.Context, batch *pgx.Batch, b *boardStep, dirty []string) error {
	if len(dirty) == 0 {
		return nil
	}
	if err := s.readRows(ctx, b, dirty); err != nil {
		return err
	}
	hasSub := b.st.cfg.Subscore != nil
	put, add := memberRows{hasSub: hasSub}, memberRows{hasSub: hasSub}
	var gone []string
	for _, m := range dirty {
		r := b.rows[m]
		elems := b.elems(m)
		switch {
		case len(elems) == 0:
			if r.stored {
				gone = append(gone, m)
			}
		case s.submit && !r.stored:
			add.append(m, elems)
		default:
			put.append(m, elems)
		}
		r.stored = len(elems) > 0
	}
	add.queue(batch, insertRowsSQL, insertRowsSubSQL, b.id)
	put.queue(batch, upsertRowsSQL, upsertRowsSubSQL, b.id)
	if len(gone) > 0 {
		batch.Queue(deleteRowsSQL, b.id, gone)
	}
	return nil
}

// insertRowsSQL writes the rows of members $2 of board $1 that the store has none of, their
// elements $5… from $3 to $4; upsertRowsSQL, those it may have. The Sub forms write the
// subscores ($9) of a board that has one.
const (
	insertRowsSQL = `INSERT INTO laurel_members (board, member, wins, spans, scores, ats)
		SELECT $1, k.member, ($5::text[])[k.lo:k.hi], ($6::bigint[])[k.lo:k.hi], ($7::bigint[])[k.lo:k.hi], ($8::bigint[])[k.lo:k.hi]
		FROM unnest($2::text[], $3::int[], $4::int[]) AS k(member, lo, hi)`
	upsertRowsSQL = insertRowsSQL + `
		ON CONFLICT (board, member) DO UPDATE SET wins = excluded.wins, spans = excluded.spans, scores = excluded.scores, ats = excluded.ats`
	insertRowsSubSQL = `INSERT INTO laurel_members (board, member, wins, spans, scores, ats, subs)
		SELECT $1, k.member, ($5::text[])[k.lo:k.hi], ($6::bigint[])[k.lo:k.hi], ($7::bigint[])[k.lo:k.hi], ($8::bigint[])[k.lo:k.hi], ($9::bigint[])[k.lo:k.hi]
		FROM unnest($2::text[], $3::int[], $4::int[]) AS k(member, lo, hi)`
	upsertRowsSubSQL = insertRowsSubSQL + `
		ON CONFLICT (board, member) DO UPDATE SET wins = excluded.wins, spans = excluded.spans, scores = excluded.scores, ats = excluded.ats, subs = excluded.subs`
)

// readMemberRowsSQL reads the rows of members $2 of board $1, a probe a member (lookups.go).
const readMemberRowsSQL = `SELECT m.member, m.wins, m.spans, m.scores, m.ats, coalesce(m.subs, '{}')
	FROM unnest($2::text[]) AS k(member)
	CROSS JOIN LATERAL (SELECT member, wins, spans, scores, ats, subs FROM laurel_members
		WHERE board = $1 AND member = k.member OFFSET 0) m`

// deleteRowsSQL deletes the rows of members $2 of board $1.
const deleteRowsSQL = `DELETE FROM laurel_members WHERE ctid IN (SELECT m.ctid
	FROM unnest($2::text[]) AS k(member)
	CROSS JOIN LATERAL (SELECT ctid FROM laurel_members
		WHERE board = $1 AND member = k.member OFFSET 0) m)`

// moveToMemberRowsSQL moves every aggregate of board $1 that laurel_aggs holds and that is
// not a rolling bucket into its member's row, which it makes: an import copies a dump's
// aggregates as rows, then moves them. The migration that made member rows runs it for every
// board (migrations/007_member_rows.sql).
const moveToMemberRowsSQL = `WITH moved AS (
	DELETE FROM laurel_aggs WHERE board = $1 AND NOT (win LIKE 'last%' AND span <> -9223372036854775808)
	RETURNING board, member, win, span, score, at, sub)
INSERT INTO laurel_members (board, member, wins, spans, scores, ats, subs)
SELECT board, member, array_agg(win ORDER BY win, span), array_agg(span ORDER BY win, span),
	array_agg(score ORDER BY win, span), array_agg(at ORDER BY win, span),
	CASE WHEN bool_or(sub IS NOT NULL) THEN array_agg(coalesce(sub, 0) ORDER BY win, span) END
FROM moved GROUP BY board, member`

// heldAggs reads the aggregates a board holds, as st says: the elements of its members' rows
// that st holds and, when buckets is set, its rolling buckets; each goes to f.
func heldAggs(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, st *state, buckets bool, f func(aggKey, aggVal) error) error {
	sql := "SELECT win, span, member, score, coalesce(sub, 0), at FROM laurel_member_aggs WHERE board = $1"
	if buckets {
		sql += " UNION ALL SELECT win, span, member, score, coalesce(sub, 0), at FROM laurel_aggs WHERE board = $1"
	}
	rows, err := q.Query(ctx, sql+" ORDER BY 1, 2, 3", st.cfg.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k aggKey
		v := aggVal{present: true}
		if err := rows.Scan(&k.win, &k.span, &k.member, &v.score, &v.sub, &v.at); err != nil {
			return err
		}
		if !bucket(k) && !st.holds(k) {
			continue
		}
		if err := f(k, v); err != nil {
			return err
		}
	}
	return rows.Err()
}
