package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/laurel/laurel"
)

// A step is one write: its boards locked, one transaction, and what it changed, which reaches
// the index once the transaction commits.
type step struct {
	e      *Store
	ctx    context.Context
	conn   *pgxpool.Conn
	tx     pgx.Tx
	now    int64
	boards map[string]*boardStep // every board locked; st is nil for one that does not exist
	hidden map[string]bool       // members whose hidden mark was read, and the mark
	global bool                  // a change that may show on any board: subscribers hear of it
	ops    int                   // the operations the step carries (a group's submits), for metrics
	after  []func() error        // run once the step is in the index, before the locks go
}

// boardStep is what a step does to one board.
type boardStep struct {
	id      string
	st      *state // nil: no such board
	version int64  // in the store when the step began
	seq     int64  // the last event sequence number

	exists       bool // the store has the board's row
	stateChanged bool
	ranked       bool // something ranked changed: the index takes a step
	deleted      bool
	rebuild      bool // the index of the board is built anew after the commit (an import)

	aggs   map[aggKey]aggVal // aggregates read or written, as they stand in the step
	dirty  map[aggKey]bool   // aggregates written
	events []newEvent        // events to insert
	drops  []laurel.IndexSet
	extra  []laurel.IndexChange // changes not from aggregates written (a hidden mark)
	reads  []laurel.IndexRead
	ids    map[string]*storedEvent // ids read or used in the step; nil value: free
	read   []laurel.IndexEntry     // the answers to reads, once applied
	undo   *undoLog                // while a request is staged: how to take it back
}

// undoLog records what staging one request of a group changes in a board's step, so that a
// request that fails leaves the others' staging as it was.
type undoLog struct {
	aggs         map[aggKey]undoAgg
	ids          map[string]undoID
	events       int
	seq          int64
	stateChanged bool
	opened       []openedSpan
}

type undoAgg struct {
	v          aggVal
	had, dirty bool
}

type undoID struct {
	ev  *storedEvent
	had bool
}

type openedSpan struct {
	ws    *windowState
	start int64
}

// begin starts recording what the next request changes.
func (s *step) begin() {
	for _, b := range s.boards {
		b.undo = &undoLog{aggs: make(map[aggKey]undoAgg), ids: make(map[string]undoID), events: len(b.events), seq: b.seq, stateChanged: b.stateChanged}
	}
}

// keep accepts what the request changed.
func (s *step) keep() {
	for _, b := range s.boards {
		b.undo = nil
	}
}

// rollback takes back what the request changed.
func (s *step) rollback() {
	for _, b := range s.boards {
		u := b.undo
		if u == nil {
			continue
		}
		b.undo = nil
		for k, old := range u.aggs {
			if old.had {
				b.aggs[k] = old.v
			} else {
				delete(b.aggs, k)
			}
			if old.dirty {
				b.dirty[k] = true
			} else {
				delete(b.dirty, k)
			}
		}
		for id, old := range u.ids {
			if old.had {
				b.ids[id] = old.ev
			} else {
				delete(b.ids, id)
			}
		}
		b.events, b.seq, b.stateChanged = b.events[:u.events], u.seq, u.stateChanged
		for _, o := range u.opened {
			o.ws.Open = slices.DeleteFunc(o.ws.Open, func(sp laurel.Span) bool { return sp.Start == o.start })
		}
	}
}

// setID notes the counted event that holds an id.
func (b *boardStep) setID(id string, ev *storedEvent) {
	if b.undo != nil {
		if _, ok := b.undo.ids[id]; !ok {
			old, had := b.ids[id]
			b.undo.ids[id] = undoID{old, had}
		}
	}
	b.ids[id] = ev
}

// open notes that the calendar period [start, end) of ws has data.
func (b *boardStep) open(ws *windowState, start, end int64) {
	if ws.addOpen(start, end) {
		b.stateChanged = true
		if b.undo != nil {
			b.undo.opened = append(b.undo.opened, openedSpan{ws, start})
		}
	}
}

type aggKey struct {
	win    string
	span   int64
	member string
}

type aggVal struct {
	score, at int64
	present   bool
}

func (v aggVal) agg() laurel.Agg {
	if !v.present {
		return laurel.Agg{}
	}
	return laurel.Agg{Score: v.score, At: v.at, Count: 1}
}

func valOf(a laurel.Agg) aggVal { return aggVal{a.Score, a.At, a.Present()} }

type newEvent struct {
	seq       int64
	member    string
	value, ts int64
	id        string
}

// storedEvent is an event with an id as the store has it.
type storedEvent struct {
	seq       int64
	member    string
	value, ts int64
}

// write runs fn as one step over boards: it locks them, runs fn in a transaction, commits,
// brings the index along, and unlocks.
func (e *Store) write(ctx context.Context, boards []string, fn func(s *step) error) error {
	return e.unavailable("write", e.runStep(ctx, boards, fn))
}

// runStep is write without the mapping of PostgreSQL's failures.
func (e *Store) runStep(ctx context.Context, boards []string, fn func(s *step) error) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	keys := make([]int64, 0, len(boards))
	for _, b := range boards {
		keys = append(keys, lockKey(e.ns, b))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	locked := false
	defer func() {
		if locked {
			// Unlock whatever happened to the step's context; a connection that cannot
			// unlock is closed, which unlocks.
			if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock_all()"); err != nil {
				conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}
		conn.Release()
	}()
	// One statement takes the locks in the order of the array (a function scan keeps it).
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(k) FROM unnest($1::bigint[]) AS k", keys); err != nil {
		conn.Conn().Close(context.WithoutCancel(ctx)) // it may hold the locks taken so far
		return fmt.Errorf("postgres: lock: %w", err)
	}
	locked = true
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	s := &step{e: e, ctx: ctx, conn: conn, tx: tx, now: e.now(), boards: make(map[string]*boardStep), hidden: make(map[string]bool)}
	if err := s.load(boards); err != nil {
		return err
	}
	if err := fn(s); err != nil {
		return err
	}
	if err := s.flush(); err != nil {
		return err
	}
	start := time.Now()
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	if e.opts.OnCommit != nil {
		e.opts.OnCommit(max(s.ops, 1), time.Since(start))
	}
	// Committed: from here on the step happened, whatever fails; the index follows, or a
	// later step, read or maintenance rebuilds it.
	// So an error now would tell the caller a stored write failed (and a client that retries
	// without ids would count it twice): it is logged, and the write succeeds.
	ictx := context.WithoutCancel(ctx)
	for _, id := range slices.Sorted(maps.Keys(s.boards)) {
		if err := s.applyIndex(ictx, s.boards[id]); err != nil {
			// The index is behind: the next write, read or maintenance pass of the board
			// rebuilds it. Without the step's reads there are no ranks to answer with.
			e.log.Error("the index missed a committed step; it will be rebuilt", "board", id, "err", err)
			return nil
		}
	}
	if s.global {
		if err := e.index.Publish(ictx); err != nil {
			e.log.Error("publish a change", "err", err)
		}
	}
	for _, f := range s.after {
		if err := f(); err != nil {
			e.log.Error("after a committed step", "err", err)
		}
	}
	return nil
}

// load reads the boards' rows.
func (s *step) load(ids []string) error {
	for _, id := range ids {
		s.boards[id] = &boardStep{id: id, aggs: make(map[aggKey]aggVal), dirty: make(map[aggKey]bool), ids: make(map[string]*storedEvent)}
	}
	rows, err := s.tx.Query(s.ctx, "SELECT id, state, version, seq FROM laurel_boards WHERE id = ANY($1)", ids)
	if err != nil {
		return fmt.Errorf("postgres: load boards: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		var version, seq int64
		if err := rows.Scan(&id, &raw, &version, &seq); err != nil {
			return err
		}
		st, err := decodeState(id, raw)
		if err != nil {
			return fmt.Errorf("postgres: board %s: %w", id, err)
		}
		b := s.boards[id]
		b.st, b.version, b.seq, b.exists = st, version, seq, true
	}
	return rows.Err()
}

// board returns a locked board; ENotFound when it does not exist.
func (s *step) board(id string) (*boardStep, error) {
	b := s.boards[id]
	if b == nil || b.st == nil {
		return nil, laurel.ErrNoBoard(id)
	}
	return b, nil
}

// get returns a member's aggregate in a span, from the step or the store.
func (s *step) get(b *boardStep, k aggKey) (aggVal, error) {
	if v, ok := b.aggs[k]; ok {
		return v, nil
	}
	var v aggVal
	err := s.tx.QueryRow(s.ctx, "SELECT score, at FROM laurel_aggs WHERE board = $1 AND win = $2 AND span = $3 AND member = $4",
		b.id, k.win, k.span, k.member).Scan(&v.score, &v.at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return v, fmt.Errorf("postgres: read an aggregate: %w", err)
	default:
		v.present = true
	}
	b.aggs[k] = v
	return v, nil
}

// prefetch reads the aggregates of keys the step has not read yet, in one query.
func (s *step) prefetch(b *boardStep, keys []aggKey) error {
	var wins, members []string
	var spans []int64
	for _, k := range keys {
		if _, ok := b.aggs[k]; ok {
			continue
		}
		b.aggs[k] = aggVal{}
		wins, spans, members = append(wins, k.win), append(spans, k.span), append(members, k.member)
	}
	if len(wins) == 0 {
		return nil
	}
	rows, err := s.tx.Query(s.ctx, `SELECT a.win, a.span, a.member, a.score, a.at
		FROM unnest($2::text[], $3::bigint[], $4::text[]) AS k(win, span, member)
		JOIN laurel_aggs a ON a.board = $1 AND a.win = k.win AND a.span = k.span AND a.member = k.member`,
		b.id, wins, spans, members)
	if err != nil {
		return fmt.Errorf("postgres: read aggregates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k aggKey
		v := aggVal{present: true}
		if err := rows.Scan(&k.win, &k.span, &k.member, &v.score, &v.at); err != nil {
			return err
		}
		b.aggs[k] = v
	}
	return rows.Err()
}

// set writes a member's aggregate in a span.
func (b *boardStep) set(k aggKey, v aggVal) {
	if !v.present {
		v = aggVal{}
	}
	if b.undo != nil {
		if _, ok := b.undo.aggs[k]; !ok {
			old, had := b.aggs[k]
			b.undo.aggs[k] = undoAgg{old, had, b.dirty[k]}
		}
	}
	b.aggs[k] = v
	b.dirty[k] = true
}

// readHidden learns which of members are hidden.
func (s *step) readHidden(members []string) error {
	var ask []string
	for _, m := range members {
		if _, ok := s.hidden[m]; !ok {
			ask = append(ask, m)
			s.hidden[m] = false
		}
	}
	if len(ask) == 0 {
		return nil
	}
	rows, err := s.tx.Query(s.ctx, "SELECT member FROM laurel_hidden WHERE member = ANY($1)", ask)
	if err != nil {
		return fmt.Errorf("postgres: read hidden marks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		s.hidden[m] = true
	}
	return rows.Err()
}

// flush writes what the step staged to the store: events, aggregates, and each board's row.
func (s *step) flush() error {
	var batch pgx.Batch
	for _, b := range s.boards {
		if b.deleted || b.st == nil {
			continue
		}
		if len(b.events) > 0 {
			var seqs, values, times []int64
			var members, ids []string
			for _, ev := range b.events {
				seqs, members, values, times, ids = append(seqs, ev.seq), append(members, ev.member), append(values, ev.value), append(times, ev.ts), append(ids, ev.id)
			}
			batch.Queue(`INSERT INTO laurel_events (board, seq, member, value, ts, id)
				SELECT $1, k.seq, k.member, k.value, k.ts, NULLIF(k.id, '')
				FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[]) AS k(seq, member, value, ts, id)`,
				b.id, seqs, members, values, times, ids)
		}
		var putW, delW, putM, delM []string
		var putS, delS, scores, ats []int64
		var touched []string
		for k := range b.dirty {
			v := b.aggs[k]
			if v.present {
				putW, putS, putM, scores, ats = append(putW, k.win), append(putS, k.span), append(putM, k.member), append(scores, v.score), append(ats, v.at)
			} else {
				delW, delS, delM = append(delW, k.win), append(delS, k.span), append(delM, k.member)
			}
			touched = append(touched, k.member)
		}
		if len(putW) > 0 {
			batch.Queue(`INSERT INTO laurel_aggs (board, win, span, member, score, at)
				SELECT $1, k.win, k.span, k.member, k.score, k.at
				FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[]) AS k(win, span, member, score, at)
				ON CONFLICT (board, win, span, member) DO UPDATE SET score = excluded.score, at = excluded.at`,
				b.id, putW, putS, putM, scores, ats)
		}
		if len(delW) > 0 {
			batch.Queue(`DELETE FROM laurel_aggs a USING unnest($2::text[], $3::bigint[], $4::text[]) AS k(win, span, member)
				WHERE a.board = $1 AND a.win = k.win AND a.span = k.span AND a.member = k.member`,
				b.id, delW, delS, delM)
		}
		if err := s.readHidden(touched); err != nil {
			return err
		}
		if b.indexChanges() > 0 || len(b.drops) > 0 || b.stateChanged {
			b.ranked = true
		}
		if b.stateChanged {
			b.st.updateDeadline()
		}
		version := b.version
		if b.ranked {
			version++
		}
		if !b.exists {
			batch.Queue("INSERT INTO laurel_boards (id, state, version, seq) VALUES ($1, $2, $3, $4)", b.id, b.st.encode(), version, b.seq)
		} else if b.ranked || len(b.events) > 0 {
			if b.stateChanged {
				batch.Queue("UPDATE laurel_boards SET state = $2, version = $3, seq = $4 WHERE id = $1", b.id, b.st.encode(), version, b.seq)
			} else {
				batch.Queue("UPDATE laurel_boards SET version = $2, seq = $3 WHERE id = $1", b.id, version, b.seq)
			}
		}
	}
	if batch.Len() == 0 {
		return nil
	}
	if err := s.tx.SendBatch(s.ctx, &batch).Close(); err != nil {
		return fmt.Errorf("postgres: write: %w", err)
	}
	return nil
}

// indexChanges counts the dirty aggregates the index ranks.
func (b *boardStep) indexChanges() int {
	n := 0
	for k := range b.dirty {
		if ws := b.st.window(k.win); ws != nil {
			if _, ok := ws.indexSet(k.span); ok {
				n++
			}
		}
	}
	return n
}

// changes lists what the step changed in the board's sets: every ranked aggregate written. A
// hidden member is in no set, so its aggregates are removals, whatever they are (it may
// have been hidden in this very step, after its aggregates changed).
func (s *step) changes(b *boardStep) []laurel.IndexChange {
	var out []laurel.IndexChange
	for k := range b.dirty {
		ws := b.st.window(k.win)
		if ws == nil {
			continue
		}
		set, ok := ws.indexSet(k.span)
		if !ok {
			continue
		}
		v := b.aggs[k]
		out = append(out, laurel.IndexChange{Set: set, Member: k.member, Score: v.score, At: v.at, Remove: !v.present || s.hidden[k.member]})
	}
	return append(out, b.extra...)
}

// applyIndex takes the board's step in the index, or rebuilds the board's index from the
// store when the index is not where the store says it is.
func (s *step) applyIndex(ctx context.Context, b *boardStep) error {
	idx := s.e.index
	if b.deleted {
		return idx.Delete(ctx, b.id)
	}
	if b.rebuild {
		return s.e.rebuild(ctx, s.conn, b.id)
	}
	if b.st == nil || !b.ranked && len(b.reads) == 0 {
		return nil
	}
	u := laurel.IndexUpdate{After: b.version, Version: b.version, Drops: b.drops, Read: b.reads}
	if b.ranked {
		u.Version++
		u.Changes = s.changes(b)
		if b.stateChanged {
			u.State = b.st.encode()
		}
	}
	read, err := idx.Apply(ctx, b.id, b.st.cfg.Order, u)
	if errors.Is(err, laurel.ErrIndexStale) {
		s.e.log.Warn("the index missed a step; rebuilding it", "board", b.id, "version", u.Version)
		if err = s.e.rebuild(ctx, s.conn, b.id); err == nil && len(b.reads) > 0 {
			read, err = idx.Apply(ctx, b.id, b.st.cfg.Order, laurel.IndexUpdate{After: u.Version, Version: u.Version, Read: b.reads})
		}
	}
	if err != nil {
		return fmt.Errorf("postgres: index board %s: %w", b.id, err)
	}
	b.read = read
	return nil
}

// rebuild makes the index of a board what the store holds, under the board's lock (held by
// conn's session). Until it records the state at the end, reads find none and wait for the
// lock. A rebuild that finds the index changed under it (Redis flushed or restarted) starts
// again, at most rebuildAttempts times in all.
func (e *Store) rebuild(ctx context.Context, conn *pgxpool.Conn, id string) error {
	for attempt := 1; ; attempt++ {
		err := e.rebuildOnce(ctx, conn, id)
		if !errors.Is(err, laurel.ErrIndexStale) || attempt == rebuildAttempts {
			return err
		}
		e.log.Warn("the index changed during a rebuild; starting it again", "board", id, "attempt", attempt)
	}
}

const rebuildAttempts = 3

// rebuildChunk is how many members one step of a rebuild puts in the index.
const rebuildChunk = 10_000

// rebuildOnce clears the board's index and fills it in chunks. The first chunk sets a fence,
// a negative version of this rebuild's own that no step takes, and every later chunk names
// it: when the index loses the board meanwhile (a flush) or another rebuild replaces the
// fence, the next chunk is refused with ErrIndexStale, so that a partial index is never
// marked current. The last chunk records the board's version and state.
func (e *Store) rebuildOnce(ctx context.Context, conn *pgxpool.Conn, id string) error {
	var raw []byte
	var version int64
	err := conn.QueryRow(ctx, "SELECT state, version FROM laurel_boards WHERE id = $1", id).Scan(&raw, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return e.index.Delete(ctx, id)
	}
	if err != nil {
		return err
	}
	st, err := decodeState(id, raw)
	if err != nil {
		return err
	}
	if err := e.index.Delete(ctx, id); err != nil {
		return err
	}
	order := st.cfg.Order
	fence := -1 - rand.Int64N(math.MaxInt64-1)
	after := int64(0)
	var changes []laurel.IndexChange
	put := func(final bool) error {
		if len(changes) < rebuildChunk && !final {
			return nil
		}
		u := laurel.IndexUpdate{After: after, Version: fence, Changes: changes}
		if final {
			u.Version, u.State = version, raw
		}
		_, err := e.index.Apply(ctx, id, order, u)
		changes, after = changes[:0], fence
		return err
	}
	for i := range st.Windows {
		ws := &st.Windows[i]
		for _, sp := range ws.rankedSpans() {
			set, _ := ws.indexSet(sp)
			rows, err := conn.Query(ctx, `SELECT a.member, a.score, a.at FROM laurel_aggs a
				WHERE a.board = $1 AND a.win = $2 AND a.span = $3
				AND NOT EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = a.member)`, id, ws.Name, sp)
			if err != nil {
				return err
			}
			for rows.Next() {
				c := laurel.IndexChange{Set: set}
				if err := rows.Scan(&c.Member, &c.Score, &c.At); err != nil {
					rows.Close()
					return err
				}
				changes = append(changes, c)
				if err := put(false); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	return put(true)
}

// catchUp brings a board to now in a step of its own: periods to close, closed periods to
// drop, rolling buckets to leave; and rebuilds its index if it missed a step.
func (e *Store) catchUp(ctx context.Context, id string) error {
	return e.write(ctx, []string{id}, func(s *step) error {
		b, err := s.board(id)
		if err != nil {
			return err
		}
		is, ok, err := e.index.State(ctx, id)
		if err != nil {
			return err
		}
		if !ok || is.Version != b.version {
			e.log.Warn("the index is not at the store's version; rebuilding it", "board", id, "index", is.Version, "store", b.version)
			if err := e.rebuild(ctx, s.conn, id); err != nil {
				return err
			}
		}
		return s.advance(b)
	})
}

// Rebuild makes a board's index what the store holds, whatever the index holds now: after
// the index was lost, or to be sure. Reads of the board wait for it.
func (e *Store) Rebuild(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	return e.write(ctx, []string{id}, func(s *step) error {
		if _, err := s.board(id); err != nil {
			return err
		}
		return e.rebuild(ctx, s.conn, id)
	})
}

// BoardIDs lists the ids of every board in the store, sorted.
func (e *Store) BoardIDs(ctx context.Context) ([]string, error) { return e.boardIDs(ctx, e.pool) }
