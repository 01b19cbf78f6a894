package postgres

import (
	"context"
	"encoding/binary"
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
// A row's elements are packed in one bytea (packRow), which costs PostgreSQL less to write and
// read than arrays of each field (docs/decisions.md), and which the node alone decodes: reads
// of a window's span read a board's rows and pick the elements in Go (eachElem), where SQL
// would take seconds to decode 100 000 rows.
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
	// written: the step's commit writes the row, as elems (queueRowWrites), which the node's
	// cache then keeps without looking each element up again.
	written bool
	elems   []rowElem
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
		return eachRow(rows, b.id, func(member string, elems []rowElem) error {
			b.takeRow(member, true, elems)
			return nil
		})
	})
}

// eachRow calls f with each member's row of board that rows (member, aggs) read, unpacked,
// and closes rows.
func eachRow(rows pgx.Rows, board string, f func(member string, elems []rowElem) error) error {
	defer rows.Close()
	var member string
	var packed []byte
	for rows.Next() {
		if err := rows.Scan(&member, &packed); err != nil {
			return err
		}
		elems, err := unpackRow(packed)
		if err != nil {
			return fmt.Errorf("postgres: board %s, member %q: %w", board, member, err)
		}
		if err := f(member, elems); err != nil {
			return err
		}
	}
	return rows.Err()
}

// A packed row is a byte giving the width of each element that follows: rowWidth, or
// rowWidthSub on a board with a subscore. An element is its window's name padded with spaces
// to nameWidth bytes (a window's name has at most 8, laurel.ParseWindow), then its span,
// score and reached_at, and its subscore where the row has them, each 8 bytes big-endian.
const (
	nameWidth   = 8
	rowWidth    = nameWidth + 3*8
	rowWidthSub = rowWidth + 8
)

// packRow packs a member's row; hasSub: the board has a subscore.
func packRow(elems []rowElem, hasSub bool) []byte {
	w := rowWidth
	if hasSub {
		w = rowWidthSub
	}
	out := make([]byte, 1, 1+w*len(elems))
	out[0] = byte(w)
	for _, e := range elems {
		name := [nameWidth]byte{' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '}
		copy(name[:], e.win)
		out = append(out, name[:]...)
		out = binary.BigEndian.AppendUint64(out, uint64(e.span))
		out = binary.BigEndian.AppendUint64(out, uint64(e.v.score))
		out = binary.BigEndian.AppendUint64(out, uint64(e.v.at))
		if hasSub {
			out = binary.BigEndian.AppendUint64(out, uint64(e.v.sub))
		}
	}
	return out
}

// unpackRow returns the elements of a packed row.
func unpackRow(p []byte) ([]rowElem, error) {
	if len(p) == 0 || (p[0] != rowWidth && p[0] != rowWidthSub) || (len(p)-1)%int(p[0]) != 0 {
		return nil, fmt.Errorf("a member's row of %d bytes is not packed as this version packs them", len(p))
	}
	w := int(p[0])
	out := make([]rowElem, 0, (len(p)-1)/w)
	for at := 1; at < len(p); at += w {
		e := p[at : at+w]
		v := aggVal{score: int64(binary.BigEndian.Uint64(e[nameWidth+8:])), at: int64(binary.BigEndian.Uint64(e[nameWidth+16:])), present: true}
		if w == rowWidthSub {
			v.sub = int64(binary.BigEndian.Uint64(e[nameWidth+24:]))
		}
		out = append(out, rowElem{strings.TrimRight(string(e[:nameWidth]), " "), int64(binary.BigEndian.Uint64(e[nameWidth:])), v})
	}
	return out, nil
}

// eachElem calls f with every element of the rows of a board's members that st holds — of
// one window when win is set — the hidden members' left out when hidden is set.
func eachElem(ctx context.Context, q querier, st *state, win string, hidden bool, f func(aggKey, aggVal) error) error {
	sql := "SELECT member, aggs FROM laurel_members m WHERE board = $1"
	if hidden {
		sql += " AND NOT EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = m.member)"
	}
	rows, err := q.Query(ctx, sql, st.cfg.ID)
	if err != nil {
		return err
	}
	return eachRow(rows, st.cfg.ID, func(member string, elems []rowElem) error {
		for _, e := range elems {
			k := aggKey{e.win, e.span, member}
			if win != "" && e.win != win || !st.holds(k) {
				continue
			}
			if err := f(k, e.v); err != nil {
				return err
			}
		}
		return nil
	})
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

// memberRows are members' rows to write, packed.
type memberRows struct {
	hasSub  bool
	members []string
	packed  [][]byte
}

func (r *memberRows) append(member string, elems []rowElem) {
	r.members, r.packed = append(r.members, member), append(r.packed, packRow(elems, r.hasSub))
}

// queue queues the write of the rows of board, if any, by sql.
func (r *memberRows) queue(batch *pgx.Batch, sql, board string) {
	if len(r.members) > 0 {
		batch.Queue(sql, board, r.members, r.packed)
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
		r.written, r.elems = true, elems
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
	add.queue(batch, insertRowsSQL, b.id)
	put.queue(batch, upsertRowsSQL, b.id)
	if len(gone) > 0 {
		batch.Queue(deleteRowsSQL, b.id, gone)
	}
	return nil
}

// insertRowsSQL writes the rows $3 of members $2 of board $1 that the store has none of;
// upsertRowsSQL, those it may have.
const (
	insertRowsSQL = `INSERT INTO laurel_members (board, member, aggs)
		SELECT $1, k.member, k.aggs FROM unnest($2::text[], $3::bytea[]) AS k(member, aggs)`
	upsertRowsSQL = insertRowsSQL + `
		ON CONFLICT (board, member) DO UPDATE SET aggs = excluded.aggs`
)

// readMemberRowsSQL reads the rows of members $2 of board $1, a probe a member (lookups.go).
const readMemberRowsSQL = `SELECT m.member, m.aggs
	FROM unnest($2::text[]) AS k(member)
	CROSS JOIN LATERAL (SELECT member, aggs FROM laurel_members
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
	RETURNING board, member, win, span, score, at, sub),
marked AS (SELECT *, bool_or(sub IS NOT NULL) OVER (PARTITION BY board, member) AS has_sub FROM moved)
INSERT INTO laurel_members (board, member, aggs)
SELECT board, member, decode(CASE WHEN bool_or(has_sub) THEN '28' ELSE '20' END, 'hex') ||
	string_agg(convert_to(rpad(win, 8), 'UTF8') || int8send(span) || int8send(score) || int8send(at) ||
		CASE WHEN has_sub THEN int8send(coalesce(sub, 0)) ELSE '' END, '' ORDER BY win, span)
FROM marked GROUP BY board, member`

// heldAggs reads the aggregates a board holds, as st says: the elements of its members' rows
// that st holds and, when buckets is set, its rolling buckets; each goes to f, in the order of
// window, span and member.
func heldAggs(ctx context.Context, q querier, st *state, buckets bool, f func(aggKey, aggVal) error) error {
	type agg struct {
		k aggKey
		v aggVal
	}
	var all []agg
	err := eachElem(ctx, q, st, "", false, func(k aggKey, v aggVal) error {
		all = append(all, agg{k, v})
		return nil
	})
	if err != nil {
		return err
	}
	if buckets {
		rows, err := q.Query(ctx, "SELECT win, span, member, score, coalesce(sub, 0), at FROM laurel_aggs WHERE board = $1", st.cfg.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a := agg{v: aggVal{present: true}}
			if err := rows.Scan(&a.k.win, &a.k.span, &a.k.member, &a.v.score, &a.v.sub, &a.v.at); err != nil {
				return err
			}
			all = append(all, a)
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	slices.SortFunc(all, func(a, b agg) int { return compareKeys(a.k, b.k) })
	for _, a := range all {
		if err := f(a.k, a.v); err != nil {
			return err
		}
	}
	return nil
}
